#include "models/general/slimelastic.h"

#include <algorithm>
#include <cmath>

#include "models/general/fitted_support.h"
#include "recbole/config/config.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

SLIMElastic::SLIMElastic(const ModelContext& ctx, SlimSolver solver)
    : Model("SLIMElastic", ctx), solver_(solver) {
  alpha_ = ctx.config.get_double("alpha");
  l1_ratio_ = ctx.config.get_double("l1_ratio");
  positive_only_ = ctx.config.get_bool("positive_only");
  hide_item_ = ctx.config.get_bool("hide_item");
  max_iter_ = ctx.config.get_int("max_iter");
  tol_ = ctx.config.get_double("tol");
  w_indptr_ =
      register_buffer("w_indptr", torch::zeros({ctx.n_items + 1}, ctx.device.long_options()));
  w_indices_ = register_buffer("w_indices", torch::zeros({0}, ctx.device.long_options()));
  w_values_ = register_buffer("w_values", torch::zeros({0}, ctx.device.float_options()));
}

namespace {

// What both solvers share: sklearn's penalties (×n_users scaling: l1 = alpha·l1_ratio·n,
// l2 = alpha·(1 − l1_ratio)·n on ½‖y − Xw‖²) and stopping rule.
struct Problem {
  int64_t n_items;
  std::vector<double> norm2;  // ‖X[:, i]‖² = degree of item i (0/1 columns)
  double l1, l2;
  double tol;
  int64_t max_iter;
  bool positive, hide_item;
  bool usable(int64_t ii, int64_t j) const { return norm2[ii] > 0.0 && !(hide_item && ii == j); }
};

// sklearn's coordinate update: the minimiser over w_ii given tmp = X[:, ii]ᵀ(r + w_ii·X[:, ii]).
inline double soft_update(const Problem& pb, double tmp, double norm2) {
  if (pb.positive && tmp < 0.0) return 0.0;
  return std::copysign(std::max(std::fabs(tmp) - pb.l1, 0.0), tmp) / (norm2 + pb.l2);
}

// sklearn's duality gap from its ingredients: dual_norm = max(XᵀR − l2·w) (max |·| without
// positivity), ‖R‖², Rᵀy, ‖w‖², ‖w‖₁.
double gap_from(const Problem& pb, double dual_norm, double r_norm2, double r_dot_y, double w_norm2,
                double l1_norm) {
  double gap, cst;
  if (dual_norm > pb.l1) {
    cst = pb.l1 / dual_norm;
    gap = 0.5 * (r_norm2 + r_norm2 * cst * cst);
  } else {
    cst = 1.0;
    gap = r_norm2;
  }
  return gap + pb.l1 * l1_norm - cst * r_dot_y + 0.5 * pb.l2 * (1.0 + cst * cst) * w_norm2;
}

// q[k] -= delta · g[k] for k < n: the Gram solver's hot loop. Compiled for AVX-512, AVX2 and the
// baseline, picked at run time, since the library itself is built for the baseline x86-64. (The
// AVX-512 clone fuses the multiply-add, so weights can differ between CPUs in the last bits.)
__attribute__((target_clones("avx512f", "avx2", "default"))) void sub_scaled(double* q,
                                                                             const double* g,
                                                                             double delta,
                                                                             int64_t n) {
  for (int64_t k = 0; k < n; ++k) q[k] -= delta * g[k];
}

struct SweepResult {
  double d_w_max = 0.0;  // largest |Δw| of the sweep
  double w_max = 0.0;    // largest |w| met in the sweep
  void note(double w_old, double w_new) {
    d_w_max = std::max(d_w_max, std::fabs(w_new - w_old));
    w_max = std::max(w_max, std::fabs(w_new));
  }
  bool settled(double tol) const { return w_max == 0.0 || d_w_max / w_max < tol; }
};

// Scratch of one worker, reused across items.
struct Workspace {
  std::vector<double> r;         // sparse solver: residual y − X·w over users
  std::vector<double> q;         // Gram solver: Xᵀ(y − X·w) over items
  std::vector<double> q_active;  // Gram solver: q restricted to the active set
  std::vector<double> g_active;  // Gram solver: G[active, active], row-major
  std::vector<double> w;         // coefficients over items
  std::vector<int32_t> active;   // items whose coefficient is (or was lately) non-zero
};

// Both solvers run the same active-set scheme (see slimelastic.h); they differ in how they
// keep the gradient: the sparse solver keeps the residual over users (a coordinate costs a pass
// over its item's users), the Gram solver keeps XᵀR over items through G = XᵀX (a coordinate
// costs O(1), a change O(n_items), or O(|active|) inside the active set).
class SparseSolver {
 public:
  SparseSolver(const Problem& pb, const BinaryCsr& xt) : pb_(pb), xt_(xt) {}

  void start(int64_t j, Workspace& ws) const {
    std::fill(ws.r.begin(), ws.r.end(), 0.0);
    for (int64_t q = xt_.indptr[j]; q < xt_.indptr[j + 1]; ++q) ws.r[xt_.indices[q]] = 1.0;
  }
  void update(int64_t ii, Workspace& ws, SweepResult& sr) const {
    const double w_old = ws.w[ii];
    const double w_new = soft_update(pb_, dot(ii, ws.r) + w_old * pb_.norm2[ii], pb_.norm2[ii]);
    if (w_new != w_old) {
      const double delta = w_new - w_old;
      for (int64_t q = xt_.indptr[ii]; q < xt_.indptr[ii + 1]; ++q) ws.r[xt_.indices[q]] -= delta;
      ws.w[ii] = w_new;
    }
    sr.note(w_old, w_new);
  }
  void begin_active(Workspace&) const {}
  void update_active(size_t a, Workspace& ws, SweepResult& sr) const {
    update(ws.active[a], ws, sr);
  }
  void end_active(int64_t, Workspace&) const {}
  double gap(int64_t j, const Workspace& ws) const {
    double dual_norm = pb_.positive ? -INFINITY : 0.0, w_norm2 = 0.0, l1_norm = 0.0;
    for (int64_t ii = 0; ii < pb_.n_items; ++ii) {
      const double xta = (pb_.hide_item && ii == j ? 0.0 : dot(ii, ws.r)) - pb_.l2 * ws.w[ii];
      dual_norm = pb_.positive ? std::max(dual_norm, xta) : std::max(dual_norm, std::fabs(xta));
      w_norm2 += ws.w[ii] * ws.w[ii];
      l1_norm += std::fabs(ws.w[ii]);
    }
    double r_norm2 = 0.0;
    for (double v : ws.r) r_norm2 += v * v;
    return gap_from(pb_, dual_norm, r_norm2, dot(j, ws.r), w_norm2, l1_norm);
  }

 private:
  double dot(int64_t ii, const std::vector<double>& r) const {
    double s = 0.0;
    for (int64_t q = xt_.indptr[ii]; q < xt_.indptr[ii + 1]; ++q) s += r[xt_.indices[q]];
    return s;
  }
  const Problem& pb_;
  const BinaryCsr& xt_;
};

class GramSolver {
 public:
  // gram: [n_items, n_items] float64, row-major (symmetric).
  GramSolver(const Problem& pb, const double* gram) : pb_(pb), g_(gram) {}

  void start(int64_t j, Workspace& ws) const {
    const double* gj = row(j);
    std::copy(gj, gj + pb_.n_items, ws.q.begin());  // Xᵀy
    if (pb_.hide_item) ws.q[j] = 0.0;
  }
  void update(int64_t ii, Workspace& ws, SweepResult& sr) const {
    const double w_old = ws.w[ii];
    const double w_new = soft_update(pb_, ws.q[ii] + w_old * pb_.norm2[ii], pb_.norm2[ii]);
    if (w_new != w_old) {
      sub_scaled(ws.q.data(), row(ii), w_new - w_old, pb_.n_items);
      ws.w[ii] = w_new;
    }
    sr.note(w_old, w_new);
  }
  // Copies q and G to the active set once, so that the active sweeps run on contiguous rows.
  void begin_active(Workspace& ws) const {
    const size_t m = ws.active.size();
    ws.q_active.resize(m);
    ws.g_active.resize(m * m);
    for (size_t a = 0; a < m; ++a) {
      ws.q_active[a] = ws.q[ws.active[a]];
      const double* gi = row(ws.active[a]);
      for (size_t b = 0; b < m; ++b) ws.g_active[a * m + b] = gi[ws.active[b]];
    }
  }
  void update_active(size_t a, Workspace& ws, SweepResult& sr) const {
    const int32_t ii = ws.active[a];
    const double w_old = ws.w[ii];
    const double w_new = soft_update(pb_, ws.q_active[a] + w_old * pb_.norm2[ii], pb_.norm2[ii]);
    if (w_new != w_old) {
      const size_t m = ws.active.size();
      sub_scaled(ws.q_active.data(), ws.g_active.data() + a * m, w_new - w_old,
                 static_cast<int64_t>(m));
      ws.w[ii] = w_new;
    }
    sr.note(w_old, w_new);
  }
  // Rebuilds the whole of q = Xᵀy − G·w from scratch (which also drops rounding drift).
  void end_active(int64_t j, Workspace& ws) const {
    start(j, ws);
    for (int32_t ii : ws.active)
      if (ws.w[ii] != 0.0) sub_scaled(ws.q.data(), row(ii), ws.w[ii], pb_.n_items);
    if (pb_.hide_item) ws.q[j] = 0.0;
  }
  // With q = XᵀR: ‖R‖² = yᵀy − wᵀXᵀy − wᵀq and Rᵀy = yᵀy − wᵀXᵀy.
  double gap(int64_t j, const Workspace& ws) const {
    const double* xty = row(j);
    const double yy = xty[j];
    double dual_norm = pb_.positive ? -INFINITY : 0.0, w_norm2 = 0.0, l1_norm = 0.0;
    double w_xty = 0.0, w_q = 0.0;
    for (int64_t ii = 0; ii < pb_.n_items; ++ii) {
      const bool hidden = pb_.hide_item && ii == j;
      const double wi = ws.w[ii];
      const double xta = (hidden ? 0.0 : ws.q[ii]) - pb_.l2 * wi;
      dual_norm = pb_.positive ? std::max(dual_norm, xta) : std::max(dual_norm, std::fabs(xta));
      w_norm2 += wi * wi;
      l1_norm += std::fabs(wi);
      if (!hidden) {
        w_xty += wi * xty[ii];
        w_q += wi * ws.q[ii];
      }
    }
    return gap_from(pb_, dual_norm, yy - w_xty - w_q, yy - w_xty, w_norm2, l1_norm);
  }

 private:
  const double* row(int64_t i) const { return g_ + i * pb_.n_items; }
  const Problem& pb_;
  const double* g_;
};

// Fits column j with `solver`; leaves the coefficients in ws.w (the caller reads and clears
// them). See slimelastic.h for the scheme and the stopping rule.
template <typename Solver>
ElasticNetReport fit_column(const Problem& pb, const Solver& solver, int64_t j, Workspace& ws) {
  ElasticNetReport rep;
  const double yy = pb.norm2[j];
  if (yy == 0.0) {  // y = 0: w = 0 is the solution
    rep.converged = true;
    return rep;
  }
  const double tol_gap = pb.tol * yy;  // tol·‖y‖²
  solver.start(j, ws);
  ws.active.clear();
  for (int64_t sweep = 0; sweep < pb.max_iter; ++sweep) {
    SweepResult full;
    for (int64_t ii = 0; ii < pb.n_items; ++ii) {
      if (!pb.usable(ii, j)) continue;
      const bool was_zero = ws.w[ii] == 0.0;
      solver.update(ii, ws, full);
      if (was_zero && ws.w[ii] != 0.0) ws.active.push_back(static_cast<int32_t>(ii));
    }
    rep.sweeps = sweep + 1;
    if (full.settled(pb.tol) || sweep == pb.max_iter - 1) {
      rep.gap = solver.gap(j, ws);
      if (rep.gap < tol_gap) {
        rep.converged = true;
        break;
      }
      if (sweep == pb.max_iter - 1) break;
    }
    // Coefficients that went back to zero leave the active set.
    ws.active.erase(std::remove_if(ws.active.begin(), ws.active.end(),
                                   [&](int32_t ii) { return ws.w[ii] == 0.0; }),
                    ws.active.end());
    // An item can re-enter after leaving inside the active sweeps: keep it once.
    std::sort(ws.active.begin(), ws.active.end());
    ws.active.erase(std::unique(ws.active.begin(), ws.active.end()), ws.active.end());
    if (ws.active.empty()) continue;
    solver.begin_active(ws);
    for (int64_t inner = 0; inner < pb.max_iter; ++inner) {
      SweepResult sr;
      for (size_t a = 0; a < ws.active.size(); ++a) solver.update_active(a, ws, sr);
      if (sr.settled(pb.tol)) break;
    }
    solver.end_active(j, ws);
  }
  return rep;
}

}  // namespace

double SLIMElastic::gram_bytes(int64_t n_items) {
  return 8.0 * static_cast<double>(n_items) * static_cast<double>(n_items);
}

bool SLIMElastic::use_gram(int64_t n_items) const {
  if (solver_ != SlimSolver::kAuto) return solver_ == SlimSolver::kGram;
  const double bytes = gram_bytes(n_items);
  const int64_t avail = available_memory_bytes();
  return bytes <= kGramLimitBytes && (avail < 0 || bytes <= 0.5 * static_cast<double>(avail));
}

void SLIMElastic::fit() {
  const int64_t n = n_items();
  const double rows = static_cast<double>(n_users());
  Problem pb{n,
             {},
             alpha_ * l1_ratio_ * rows,
             alpha_ * (1.0 - l1_ratio_) * rows,
             tol_,
             max_iter_,
             positive_only_,
             hide_item_};
  const std::vector<int64_t> deg = train_.item_degrees();
  pb.norm2.assign(deg.begin(), deg.end());

  const int threads = ThreadPool::instance().threads();
  std::vector<Workspace> spaces(threads);
  for (auto& ws : spaces) ws.w.assign(n, 0.0);
  std::vector<std::vector<std::pair<int32_t, float>>> columns(n);
  reports_.assign(n, ElasticNetReport{});
  auto run = [&](const auto& solver) {
    parallel_for(n, [&](int64_t j, int worker) {
      Workspace& ws = spaces[worker];
      reports_[j] = fit_column(pb, solver, j, ws);
      for (int64_t ii = 0; ii < n; ++ii)
        if (ws.w[ii] != 0.0) {
          columns[j].emplace_back(static_cast<int32_t>(ii), static_cast<float>(ws.w[ii]));
          ws.w[ii] = 0.0;
        }
    });
  };
  const bool gram = use_gram(n);
  if (gram) {
    const torch::Tensor g = item_gram(train_, torch::kFloat64);
    for (auto& ws : spaces) ws.q.assign(n, 0.0);
    run(GramSolver(pb, g.data_ptr<double>()));
  } else {
    const BinaryCsr xt = transpose(train_);
    for (auto& ws : spaces) ws.r.assign(n_users(), 0.0);
    run(SparseSolver(pb, xt));
  }

  int64_t sweeps = 0, unconverged = 0, nnz = 0;
  for (int64_t j = 0; j < n; ++j) {
    sweeps += reports_[j].sweeps;
    unconverged += reports_[j].converged ? 0 : 1;
    nnz += static_cast<int64_t>(columns[j].size());
  }
  log::debug("SLIMElastic (" + std::string(gram ? "Gram" : "sparse") +
             " solver): " + std::to_string(n) + " regressions, " + std::to_string(sweeps) +
             " full sweeps, " + std::to_string(unconverged) + " stopped at max_iter, " +
             std::to_string(nnz) + " non-zero weights");
  const CsrWeights w = csr_from_columns(n, columns);
  assign_buffer(w_indptr_, device_manager().place(w.indptr));
  assign_buffer(w_indices_, device_manager().place(w.indices));
  assign_buffer(w_values_, device_manager().place(w.values));
}

torch::Tensor SLIMElastic::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  const std::vector<int64_t> u = to_vector(users);
  return device_manager().place(
      history_times_csr(train_, u, w_indptr_, w_indices_, w_values_, n_items()));
}

torch::Tensor SLIMElastic::dense_weights() const {
  return csr_to_dense(w_indptr_, w_indices_, w_values_, w_indptr_.size(0) - 1);
}

RECBOLE_REGISTER_MODEL(SLIMElastic) {
  register_model({"SLIMElastic",
                  "general",
                  InputType::kFitOnce,
                  "SLIM with one elastic-net regression per item (coordinate descent)",
                  {config::Key("alpha", config::KeyType::kFloat)
                       .min(0)
                       .help("Overall regularisation strength"),
                   config::Key("l1_ratio", config::KeyType::kFloat)
                       .min(0)
                       .max(1)
                       .help("Share of L1 in the elastic-net penalty"),
                   config::Key("positive_only", config::KeyType::kBool)
                       .help("Clip negative item weights to zero"),
                   config::Key("hide_item", config::KeyType::kBool)
                       .help("Exclude the target item from its own regression"),
                   config::Key("max_iter", config::KeyType::kInt)
                       .min(1)
                       .help("Coordinate-descent sweeps per item"),
                   config::Key("tol", config::KeyType::kFloat)
                       .above(0)
                       .help("Coordinate-descent convergence tolerance")},
                  [](const ModelContext& ctx) {
                    return std::make_shared<SLIMElastic>(ctx, SlimSolver::kAuto);
                  }});
}

}  // namespace recbole::models
