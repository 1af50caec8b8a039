#pragma once
// The fast paths' switch. A fast path computes what a reference path computes, faster: a model's
// own epoch (BPR's fused CPU epoch), a step with its gradient written out (LightGCN, the context
// models' closed forms), a step in parallel parts, a fused autograd function of models/layers
// (on the CPU), the fused Adam. The reference path is libtorch autograd over the composed
// expressions with libtorch's optimizer. Each fast path asks fast_paths_enabled() where it
// chooses, and a test over the model registry trains every model both ways and compares them
// (tests/trainer/test_fast_paths.cpp).
//
// The config key `fast_path` (default true) sets it for a run: the trainer holds a
// FastPathGuard while it trains and evaluates. Process-wide (the ThreadPool's workers read it
// too), like a mode: a guard restores the previous value when it ends.
namespace recbole {

// True unless a FastPathGuard(false) is alive.
bool fast_paths_enabled();

class FastPathGuard {
 public:
  explicit FastPathGuard(bool enabled);
  ~FastPathGuard();
  FastPathGuard(const FastPathGuard&) = delete;
  FastPathGuard& operator=(const FastPathGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace recbole
