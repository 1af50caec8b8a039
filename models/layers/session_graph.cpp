#include "models/layers/session_graph.h"

#include <algorithm>
#include <vector>

namespace recbole::models::layers {

SessionGraphs session_graphs(const torch::Tensor& item_seq, const torch::Tensor& item_seq_len,
                             int64_t width) {
  const torch::Tensor seq = DeviceManager::to_host(item_seq).contiguous();
  const torch::Tensor len = DeviceManager::to_host(item_seq_len).contiguous();
  const int64_t b = seq.size(0), full = seq.size(1), w = width;
  SessionGraphs g{torch::zeros({b, w}, torch::kInt64), torch::zeros({b, w}, torch::kInt64),
                  torch::zeros({b, w, w}), torch::zeros({b, w, w})};
  const int64_t* s = seq.data_ptr<int64_t>();
  const int64_t* n = len.data_ptr<int64_t>();
  int64_t* nodes = g.nodes.data_ptr<int64_t>();
  int64_t* alias = g.alias.data_ptr<int64_t>();
  float* a_in = g.a_in.data_ptr<float>();
  float* a_out = g.a_out.data_ptr<float>();
  std::vector<int64_t> distinct;
  std::vector<float> m(static_cast<size_t>(w * w));
  for (int64_t r = 0; r < b; ++r) {
    const int64_t* row = s + r * full;
    const int64_t l = std::min(n[r], w);
    // The nodes: the distinct values of the row's first w positions (0 among them when padded).
    distinct.assign(row, row + w);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    std::copy(distinct.begin(), distinct.end(), nodes + r * w);
    auto node_of = [&](int64_t item) {
      return std::lower_bound(distinct.begin(), distinct.end(), item) - distinct.begin();
    };
    for (int64_t t = 0; t < w; ++t) alias[r * w + t] = node_of(row[t]);
    std::fill(m.begin(), m.end(), 0.f);
    for (int64_t t = 0; t + 1 < l && row[t + 1] != 0; ++t)
      m[static_cast<size_t>(alias[r * w + t] * w + alias[r * w + t + 1])] = 1.f;
    float* in = a_in + r * w * w;
    float* out = a_out + r * w * w;
    for (int64_t u = 0; u < w; ++u) {
      float outdeg = 0.f, indeg = 0.f;
      for (int64_t v = 0; v < w; ++v) {
        outdeg += m[static_cast<size_t>(u * w + v)];
        indeg += m[static_cast<size_t>(v * w + u)];
      }
      if (outdeg == 0.f) outdeg = 1.f;
      if (indeg == 0.f) indeg = 1.f;
      for (int64_t v = 0; v < w; ++v) {
        out[u * w + v] = m[static_cast<size_t>(u * w + v)] / outdeg;  // A_out[u, v]
        in[u * w + v] = m[static_cast<size_t>(v * w + u)] / indeg;  // A_in[u, v] = M[v, u]/indeg u
      }
    }
  }
  return g;
}

SessionGraphs place(const SessionGraphs& graphs, const DeviceManager& device) {
  return {device.place(graphs.nodes), device.place(graphs.alias), device.place(graphs.a_in),
          device.place(graphs.a_out)};
}

GatedGraphImpl::GatedGraphImpl(int64_t d, int64_t steps, bool edge_biases) : steps_(steps) {
  edge_in = register_module("linear_edge_in", torch::nn::Linear(d, d));
  edge_out = register_module("linear_edge_out", torch::nn::Linear(d, d));
  w_ih = register_parameter("w_ih", torch::empty({3 * d, 2 * d}));
  w_hh = register_parameter("w_hh", torch::empty({3 * d, d}));
  b_ih = register_parameter("b_ih", torch::empty({3 * d}));
  b_hh = register_parameter("b_hh", torch::empty({3 * d}));
  if (edge_biases) {
    b_iah = register_parameter("b_iah", torch::empty({d}));
    b_ioh = register_parameter("b_ioh", torch::empty({d}));
  }
}

torch::Tensor GatedGraphImpl::forward(torch::Tensor h, const SessionGraphs& graphs) {
  const torch::Tensor& a_in = graphs.a_in;
  const torch::Tensor& a_out = graphs.a_out;
  for (int64_t s = 0; s < steps_; ++s) {
    torch::Tensor in = torch::matmul(a_in, edge_in->forward(h));
    torch::Tensor out = torch::matmul(a_out, edge_out->forward(h));
    if (b_iah.defined()) in = in + b_iah, out = out + b_ioh;
    const auto gi = torch::linear(torch::cat({in, out}, 2), w_ih, b_ih).chunk(3, 2);
    const auto gh = torch::linear(h, w_hh, b_hh).chunk(3, 2);
    const torch::Tensor r = torch::sigmoid(gi[0] + gh[0]);
    const torch::Tensor z = torch::sigmoid(gi[1] + gh[1]);
    const torch::Tensor n = torch::tanh(gi[2] + r * gh[2]);
    h = (1 - z) * h + z * n;
  }
  return h;
}

torch::Tensor GatedGraphImpl::position_states(const torch::Tensor& items,
                                              const torch::Tensor& item_seq,
                                              const torch::Tensor& item_seq_len,
                                              const DeviceManager& device) {
  const int64_t width = item_seq_len.max().item<int64_t>();
  const SessionGraphs g = place(session_graphs(item_seq, item_seq_len, width), device);
  return states_by_position(forward(torch::embedding(items, g.nodes, /*padding_idx=*/0), g),
                            g.alias);
}

torch::Tensor states_by_position(const torch::Tensor& states, const torch::Tensor& alias) {
  return states.gather(1, alias.unsqueeze(2).expand({-1, -1, states.size(2)}));
}

}  // namespace recbole::models::layers
