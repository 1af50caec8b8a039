#include "models/general/fitted_support.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>

#include "recbole/utils/error.h"

namespace recbole::models {

BinaryCsr transpose(const data::InteractionMatrix& x) {
  BinaryCsr t;
  t.n_rows = x.n_items();
  t.n_cols = x.n_users();
  t.indptr.assign(x.n_items() + 1, 0);
  for (int32_t i : x.indices()) ++t.indptr[i + 1];
  for (int64_t i = 0; i < x.n_items(); ++i) t.indptr[i + 1] += t.indptr[i];
  t.indices.resize(x.indices().size());
  std::vector<int64_t> fill(t.indptr.begin(), t.indptr.end() - 1);
  // Users visited in ascending order, so every item's user list comes out sorted.
  for (int64_t u = 0; u < x.n_users(); ++u)
    for (const int32_t* it = x.row_begin(static_cast<int32_t>(u));
         it != x.row_end(static_cast<int32_t>(u)); ++it)
      t.indices[fill[*it]++] = static_cast<int32_t>(u);
  return t;
}

BinaryCsr as_csr(const data::InteractionMatrix& x) {
  BinaryCsr c;
  c.n_rows = x.n_users();
  c.n_cols = x.n_items();
  c.indptr = x.indptr();
  c.indices = x.indices();
  return c;
}

namespace {

CsrWeights csr_tensors(const std::vector<int64_t>& indptr, const std::vector<int64_t>& indices,
                       const std::vector<float>& values) {
  CsrWeights w;
  w.indptr = torch::tensor(indptr, torch::kInt64);
  w.indices = torch::tensor(indices, torch::kInt64);
  w.values = torch::tensor(values, torch::kFloat32);
  return w;
}

}  // namespace

CsrWeights csr_from_columns(int64_t n_rows,
                            const std::vector<std::vector<std::pair<int32_t, float>>>& columns) {
  std::vector<int64_t> indptr(n_rows + 1, 0);
  for (const auto& col : columns)
    for (const auto& e : col) ++indptr[e.first + 1];
  for (int64_t r = 0; r < n_rows; ++r) indptr[r + 1] += indptr[r];
  std::vector<int64_t> indices(indptr.back());
  std::vector<float> values(indptr.back());
  std::vector<int64_t> fill(indptr.begin(), indptr.end() - 1);
  // Columns visited in ascending order, so each row's column indices come out sorted.
  for (size_t c = 0; c < columns.size(); ++c)
    for (const auto& [r, v] : columns[c]) {
      indices[fill[r]] = static_cast<int64_t>(c);
      values[fill[r]++] = v;
    }
  return csr_tensors(indptr, indices, values);
}

CsrWeights csr_from_rows(const std::vector<std::vector<std::pair<int32_t, float>>>& rows) {
  std::vector<int64_t> indptr(rows.size() + 1, 0);
  std::vector<int64_t> indices;
  std::vector<float> values;
  for (size_t r = 0; r < rows.size(); ++r) {
    auto row = rows[r];
    std::sort(row.begin(), row.end());
    for (const auto& [c, v] : row) {
      indices.push_back(c);
      values.push_back(v);
    }
    indptr[r + 1] = static_cast<int64_t>(indices.size());
  }
  return csr_tensors(indptr, indices, values);
}

std::vector<int64_t> to_vector(const torch::Tensor& users) {
  torch::Tensor u = DeviceManager::to_host(users).to(torch::kInt64).contiguous().view({-1});
  return std::vector<int64_t>(u.data_ptr<int64_t>(), u.data_ptr<int64_t>() + u.numel());
}

namespace {

template <typename T>
void accumulate_gram(const data::InteractionMatrix& x, T* g) {
  const int64_t n = x.n_items();
  for (int64_t u = 0; u < x.n_users(); ++u) {
    const int32_t* b = x.row_begin(static_cast<int32_t>(u));
    const int32_t* e = x.row_end(static_cast<int32_t>(u));
    for (const int32_t* i = b; i != e; ++i) {
      T* row = g + static_cast<int64_t>(*i) * n;
      for (const int32_t* j = b; j != e; ++j) row[*j] += T(1);
    }
  }
}

}  // namespace

torch::Tensor item_gram(const data::InteractionMatrix& x, torch::ScalarType dtype) {
  torch::Tensor g = torch::zeros({x.n_items(), x.n_items()}, dtype);
  if (dtype == torch::kFloat64)
    accumulate_gram(x, g.data_ptr<double>());
  else if (dtype == torch::kFloat32)
    accumulate_gram(x, g.data_ptr<float>());
  else
    throw Error("item_gram: dtype must be float32 or float64");
  return g;
}

namespace {

// A weight matrix in CSR (int64 indptr/indices, float32 values) brought to host memory, with raw
// pointers for the sparse loops below.
struct HostCsr {
  HostCsr(const torch::Tensor& ip, const torch::Tensor& ix, const torch::Tensor& vs)
      : indptr_host(DeviceManager::to_host(ip).contiguous()),
        indices_host(DeviceManager::to_host(ix).contiguous()),
        values_host(DeviceManager::to_host(vs).contiguous()),
        indptr(indptr_host.data_ptr<int64_t>()),
        indices(indices_host.data_ptr<int64_t>()),
        values(values_host.data_ptr<float>()) {}
  torch::Tensor indptr_host, indices_host, values_host;  // own the memory the pointers read
  const int64_t* indptr;
  const int64_t* indices;
  const float* values;
};

}  // namespace

torch::Tensor history_times_csr(const data::InteractionMatrix& x, const std::vector<int64_t>& users,
                                const torch::Tensor& indptr, const torch::Tensor& indices,
                                const torch::Tensor& values, int64_t n_cols) {
  const HostCsr w(indptr, indices, values);
  const int64_t *ipp = w.indptr, *ixp = w.indices;
  const float* vsp = w.values;
  const int64_t b = static_cast<int64_t>(users.size());
  torch::Tensor out = torch::zeros({b, n_cols}, torch::kFloat32);
  float* op = out.data_ptr<float>();
  for (int64_t r = 0; r < b; ++r) {
    float* row = op + r * n_cols;
    const int32_t u = static_cast<int32_t>(users[r]);
    for (const int32_t* it = x.row_begin(u); it != x.row_end(u); ++it)
      for (int64_t k = ipp[*it]; k < ipp[*it + 1]; ++k) row[ixp[k]] += vsp[k];
  }
  return out;
}

torch::Tensor csr_times_history(const data::InteractionMatrix& x, const std::vector<int64_t>& users,
                                const torch::Tensor& indptr, const torch::Tensor& indices,
                                const torch::Tensor& values) {
  const HostCsr w(indptr, indices, values);
  const int64_t *ipp = w.indptr, *ixp = w.indices;
  const float* vsp = w.values;
  const int64_t b = static_cast<int64_t>(users.size());
  const int64_t n_items = x.n_items();
  torch::Tensor out = torch::zeros({b, n_items}, torch::kFloat32);
  float* op = out.data_ptr<float>();
  for (int64_t r = 0; r < b; ++r) {
    float* row = op + r * n_items;
    const int64_t u = users[r];
    for (int64_t k = ipp[u]; k < ipp[u + 1]; ++k) {
      const int32_t v = static_cast<int32_t>(ixp[k]);
      for (const int32_t* it = x.row_begin(v); it != x.row_end(v); ++it) row[*it] += vsp[k];
    }
  }
  return out;
}

torch::Tensor csr_to_dense(const torch::Tensor& indptr, const torch::Tensor& indices,
                           const torch::Tensor& values, int64_t n_cols) {
  const torch::Tensor ip = DeviceManager::to_host(indptr);
  const int64_t n_rows = ip.size(0) - 1;
  torch::Tensor rows = torch::repeat_interleave(torch::arange(n_rows, torch::kInt64), ip.diff());
  torch::Tensor dense = torch::zeros({n_rows, n_cols}, torch::kFloat32);
  dense.index_put_({rows, DeviceManager::to_host(indices)}, DeviceManager::to_host(values));
  return dense;
}

void assign_buffer(torch::Tensor& buffer, const torch::Tensor& value) {
  torch::NoGradGuard no_grad;
  buffer.set_(value.contiguous());
}

namespace {

// First integer of a one-line file (cgroup files); -1 when absent or "max".
int64_t read_single_value(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  try {
    return std::stoll(word);
  } catch (...) {
    return -1;
  }
}

int64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

int64_t available_memory_bytes() {
  int64_t avail = meminfo_available();
  // A container's limit can be far below the host's free memory.
  const std::pair<const char*, const char*> cgroups[] = {
      {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
      {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
       "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
  for (const auto& [limit_path, usage_path] : cgroups) {
    const int64_t limit = read_single_value(limit_path);
    const int64_t usage = read_single_value(usage_path);
    // cgroup v1 reports "no limit" as a huge number; it never lowers the estimate then.
    if (limit > 0 && usage >= 0 && limit < (int64_t(1) << 60)) {
      const int64_t room = std::max<int64_t>(0, limit - usage);
      avail = avail < 0 ? room : std::min(avail, room);
      break;
    }
  }
  return avail;
}

void require_memory(const std::string& model, double bytes, const std::string& what) {
  const int64_t avail = available_memory_bytes();
  if (avail < 0 || bytes <= static_cast<double>(avail)) return;
  throw Error(model + ": fitting needs " + gib(bytes) + " (" + what + ") but only " + gib(avail) +
              " of memory is available (MemAvailable, or the cgroup limit minus usage); use a "
              "model that keeps less per item pair (ItemKNN, SLIMElastic) or filter rare items "
              "(min_item_inter_num / item_inter_num_interval)");
}

}  // namespace recbole::models
