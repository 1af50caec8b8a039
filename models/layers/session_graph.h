#pragma once
// What SR-GNN and GC-SAN share (RecBole's _get_slice and GNN): each sequence as a session graph,
// and the gated GNN over it.
//
// The graph of a sequence: its distinct items are the nodes (ascending ids), an edge joins each
// item to the next one (0/1, repeats collapse, self-loops possible), A_in[v, u] = M[u, v] /
// indeg(v) and A_out[u, v] = M[u, v] / outdeg(u) (0 degrees count 1).
#include <torch/torch.h>

#include "recbole/runtime/device_manager.h"

namespace recbole::models::layers {

// The session graphs of a batch (CPU, built from item_seq [B, L] int64 and item_seq_len [B],
// each row's first `width` positions): nodes [B, width] int64 (the row's distinct items
// ascending, then 0), alias [B, width] int64 (the node of each position), a_in and a_out
// [B, width, width] float32 as above.
//
// RecBole builds them L wide; as wide as the batch's longest sequence they give the same
// states: the nodes it adds beyond (the padding item, zero fill) have no edges, so they never
// reach a real node.
struct SessionGraphs {
  torch::Tensor nodes, alias, a_in, a_out;
};
SessionGraphs session_graphs(const torch::Tensor& item_seq, const torch::Tensor& item_seq_len,
                             int64_t width);
// The graphs on the model's device.
SessionGraphs place(const SessionGraphs& graphs, const DeviceManager& device);

// `steps` gated GNN steps over node states H [B, w, d]:
//   a_in = A_in (H W_inᵀ + b_in) (+ b_iah),  a_out = A_out (H W_outᵀ + b_out) (+ b_ioh)
//   gi = [a_in ; a_out] W_ihᵀ + b_ih (W_ih [3d, 2d]),  gh = H W_hhᵀ + b_hh (W_hh [3d, d]),
//   r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), n = tanh(gi_n + r ⊙ gh_n),  H ← (1 − z) ⊙ H + z ⊙ n
// (RecBole's cell: z weighs the new state, unlike torch's GRUCell). SR-GNN has the extra biases
// b_iah, b_ioh; GC-SAN does not. Parameters are left as libtorch makes them: the model
// initialises them.
class GatedGraphImpl : public torch::nn::Module {
 public:
  GatedGraphImpl(int64_t d, int64_t steps, bool edge_biases);
  // h: [B, w, d] and the graphs on the model's device → [B, w, d].
  torch::Tensor forward(torch::Tensor h, const SessionGraphs& graphs);
  // What SR-GNN and GC-SAN run first: the batch's session graphs as wide as its longest sequence,
  // node states initialised from `items` [n_items, d] (padding_idx 0), the GNN steps, then each
  // position's node state: [B, longest, d] on the device.
  torch::Tensor position_states(const torch::Tensor& items, const torch::Tensor& item_seq,
                                const torch::Tensor& item_seq_len, const DeviceManager& device);

  torch::nn::Linear edge_in{nullptr}, edge_out{nullptr};
  torch::Tensor w_ih, w_hh, b_ih, b_hh, b_iah, b_ioh;  // b_iah, b_ioh undefined without edge biases

 private:
  int64_t steps_;
};
TORCH_MODULE(GatedGraph);

// The node state of each position: states [B, w, d], alias [B, w] on the same device → [B, w, d].
torch::Tensor states_by_position(const torch::Tensor& states, const torch::Tensor& alias);

}  // namespace recbole::models::layers
