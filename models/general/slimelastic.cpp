#include "models/general/slimelastic.h"

#include <algorithm>
#include <cmath>

#include "models/general/fitted_support.h"
#include "recbole/config/config.h"
#include "recbole/utils/logging.h"

namespace recbole::models {

SLIMElastic::SLIMElastic(const ModelContext& ctx) : Model("SLIMElastic", ctx) {
  alpha_ = ctx.config.get_double("alpha");
  l1_ratio_ = ctx.config.get_double("l1_ratio");
  positive_only_ = ctx.config.get_bool("positive_only");
  hide_item_ = ctx.config.get_bool("hide_item");
  max_iter_ = ctx.config.get_int("max_iter");
  tol_ = ctx.config.get_double("tol");
  w_indptr_ = register_buffer("w_indptr", torch::zeros({ctx.n_items + 1}, ctx.device.long_options()));
  w_indices_ = register_buffer("w_indices", torch::zeros({0}, ctx.device.long_options()));
  w_values_ = register_buffer("w_values", torch::zeros({0}, ctx.device.float_options()));
}

namespace {

struct Problem {
  const BinaryCsr& xt;  // item → users (the columns of X)
  double l1, l2;        // sklearn's scaled penalties: alpha·l1_ratio·n, alpha·(1 − l1_ratio)·n
  double tol;
  int64_t max_iter;
  bool positive, hide_item;
};

// Scratch of one worker, reused across items.
struct Workspace {
  std::vector<double> r;  // residual y − X·w over users
  std::vector<double> w;  // coefficients over items
  std::vector<int32_t> active;  // items whose coefficient is (or was lately) non-zero
};

double column_dot(const BinaryCsr& xt, int64_t ii, const std::vector<double>& r) {
  double s = 0.0;
  for (int64_t q = xt.indptr[ii]; q < xt.indptr[ii + 1]; ++q) s += r[xt.indices[q]];
  return s;
}

// sklearn's duality gap for the (×n_users scaled) elastic-net problem at the current w, r.
double duality_gap(const Problem& pb, int64_t j, const Workspace& ws) {
  const int64_t n = pb.xt.n_rows;
  double dual_norm = pb.positive ? -INFINITY : 0.0;
  double w_norm2 = 0.0, l1_norm = 0.0;
  for (int64_t ii = 0; ii < n; ++ii) {
    const bool hidden = pb.hide_item && ii == j;
    const double xta = (hidden ? 0.0 : column_dot(pb.xt, ii, ws.r)) - pb.l2 * ws.w[ii];
    dual_norm = pb.positive ? std::max(dual_norm, xta) : std::max(dual_norm, std::fabs(xta));
    w_norm2 += ws.w[ii] * ws.w[ii];
    l1_norm += std::fabs(ws.w[ii]);
  }
  double r_norm2 = 0.0;
  for (double v : ws.r) r_norm2 += v * v;
  const double r_dot_y = column_dot(pb.xt, j, ws.r);  // y = X[:, j], 0/1
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

struct SweepResult {
  double d_w_max = 0.0;  // largest |Δw| of the sweep
  double w_max = 0.0;    // largest |w| met in the sweep
};

// One coordinate-descent update of coefficient ii (sklearn's update, residual kept current).
inline void update(const Problem& pb, int64_t ii, Workspace& ws, SweepResult& sr) {
  const BinaryCsr& xt = pb.xt;
  const int64_t norm2 = xt.row_size(ii);  // ‖X[:, ii]‖² of a 0/1 column
  const double w_old = ws.w[ii];
  const double tmp = column_dot(xt, ii, ws.r) + w_old * static_cast<double>(norm2);
  double w_new;
  if (pb.positive && tmp < 0.0)
    w_new = 0.0;
  else
    w_new = std::copysign(std::max(std::fabs(tmp) - pb.l1, 0.0), tmp) /
            (static_cast<double>(norm2) + pb.l2);
  if (w_new != w_old) {
    const double delta = w_new - w_old;
    for (int64_t q = xt.indptr[ii]; q < xt.indptr[ii + 1]; ++q) ws.r[xt.indices[q]] -= delta;
    ws.w[ii] = w_new;
  }
  sr.d_w_max = std::max(sr.d_w_max, std::fabs(w_new - w_old));
  sr.w_max = std::max(sr.w_max, std::fabs(w_new));
}

// Fits column j; leaves the coefficients in ws.w (the caller reads and clears them).
//
// Active-set coordinate descent: a full sweep over every usable column, then sweeps over the
// non-zero coefficients only until their largest change is below tol × the largest coefficient,
// then a full sweep again. sklearn's stopping test is applied after each full sweep (largest
// change below tol × largest coefficient, or the last of max_iter full sweeps: then the duality
// gap must be below tol·‖y‖²). The minimiser is the one sklearn converges to; the inner sweeps
// only skip the columns that stay at zero, which are most of them, each costing a pass over its
// users.
ElasticNetReport fit_column(const Problem& pb, int64_t j, Workspace& ws) {
  ElasticNetReport rep;
  const BinaryCsr& xt = pb.xt;
  const int64_t n = xt.n_rows;
  std::fill(ws.r.begin(), ws.r.end(), 0.0);
  for (int64_t q = xt.indptr[j]; q < xt.indptr[j + 1]; ++q) ws.r[xt.indices[q]] = 1.0;
  const double tol_gap = pb.tol * static_cast<double>(xt.row_size(j));  // tol·‖y‖²
  if (xt.row_size(j) == 0) {  // y = 0: w = 0 is the solution
    rep.converged = true;
    return rep;
  }
  ws.active.clear();
  for (int64_t sweep = 0; sweep < pb.max_iter; ++sweep) {
    SweepResult full;
    for (int64_t ii = 0; ii < n; ++ii) {
      if (xt.row_size(ii) == 0 || (pb.hide_item && ii == j)) continue;
      const bool was_zero = ws.w[ii] == 0.0;
      update(pb, ii, ws, full);
      if (was_zero && ws.w[ii] != 0.0) ws.active.push_back(static_cast<int32_t>(ii));
    }
    rep.sweeps = sweep + 1;
    if (full.w_max == 0.0 || full.d_w_max / full.w_max < pb.tol || sweep == pb.max_iter - 1) {
      rep.gap = duality_gap(pb, j, ws);
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
    std::sort(ws.active.begin(), ws.active.end());
    for (int64_t inner = 0; inner < pb.max_iter && !ws.active.empty(); ++inner) {
      SweepResult sr;
      for (int32_t ii : ws.active) update(pb, ii, ws, sr);
      if (sr.w_max == 0.0 || sr.d_w_max / sr.w_max < pb.tol) break;
    }
  }
  return rep;
}

}  // namespace

void SLIMElastic::fit() {
  const BinaryCsr xt = transpose(train_);
  const int64_t n = n_items();
  const double rows = static_cast<double>(n_users());
  const Problem pb{xt, alpha_ * l1_ratio_ * rows, alpha_ * (1.0 - l1_ratio_) * rows, tol_,
                   max_iter_, positive_only_, hide_item_};
  const int threads = fit_threads();
  std::vector<Workspace> spaces(threads);
  for (auto& ws : spaces) {
    ws.r.assign(n_users(), 0.0);
    ws.w.assign(n, 0.0);
  }
  std::vector<std::vector<std::pair<int32_t, float>>> columns(n);
  reports_.assign(n, ElasticNetReport{});
  parallel_for(n, threads, [&](int64_t j, int worker) {
    Workspace& ws = spaces[worker];
    reports_[j] = fit_column(pb, j, ws);
    for (int64_t ii = 0; ii < n; ++ii)
      if (ws.w[ii] != 0.0) {
        columns[j].emplace_back(static_cast<int32_t>(ii), static_cast<float>(ws.w[ii]));
        ws.w[ii] = 0.0;
      }
  });
  int64_t sweeps = 0, unconverged = 0, nnz = 0;
  for (int64_t j = 0; j < n; ++j) {
    sweeps += reports_[j].sweeps;
    unconverged += reports_[j].converged ? 0 : 1;
    nnz += static_cast<int64_t>(columns[j].size());
  }
  log::debug("SLIMElastic: " + std::to_string(n) + " regressions, " + std::to_string(sweeps) +
             " sweeps in all, " + std::to_string(unconverged) + " stopped at max_iter, " +
             std::to_string(nnz) + " non-zero weights");
  const CsrWeights w = csr_from_columns(n, columns);
  assign_buffer(w_indptr_, device_manager().place(w.indptr));
  assign_buffer(w_indices_, device_manager().place(w.indices));
  assign_buffer(w_values_, device_manager().place(w.values));
}

torch::Tensor SLIMElastic::full_sort_predict(const torch::Tensor& users) {
  const std::vector<int64_t> u = to_vector(users);
  return device_manager().place(
      history_times_csr(train_, u, w_indptr_, w_indices_, w_values_, n_items()));
}

torch::Tensor SLIMElastic::dense_weights() const {
  return csr_to_dense(w_indptr_, w_indices_, w_values_, w_indptr_.size(0) - 1);
}


void register_slimelastic() {
  register_model("SLIMElastic", "SLIM with one elastic-net regression per item (coordinate descent)",
                 [](const ModelContext& ctx) { return std::make_shared<SLIMElastic>(ctx); });
}

}  // namespace recbole::models
