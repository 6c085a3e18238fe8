// The dispatcher row: candidates ordered by auto_rank (highest first), the first whose gate says
// yes runs. Rows without a preparer (GPU paths not in this build) are never candidates.
#include "paths/auto_path.hpp"

#include <algorithm>
#include <memory>

#include "paths/wrapped_execution.hpp"

namespace fa {
namespace {

class AutoExecution : public WrappedExecution {
 public:
  AutoExecution(std::unique_ptr<Execution> inner, const PathRow& ran)
      : WrappedExecution(std::move(inner)), ran_(ran.name), rz_keys_(ran.rz_accumulate_keys) {}
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    out.ran_path = ran_;
    out.rz_accumulate_keys = rz_keys_;  // the bias check admits the drift of the path that ran
    return out;
  }

 private:
  std::string ran_;
  int rz_keys_;
};

}  // namespace

PathRow auto_row(const std::vector<PathRow>& rows, const DeviceFacts& device) {
  auto order = std::make_shared<std::vector<PathRow>>();
  for (const auto& r : rows)
    if (r.auto_rank > 0 && r.prepare) order->push_back(r);
  std::stable_sort(order->begin(), order->end(),
                   [](const PathRow& a, const PathRow& b) { return a.auto_rank > b.auto_rank; });
  std::string doc;
  for (const auto& r : *order) doc += (doc.empty() ? "" : " > ") + r.name;

  auto pick = [order](const Problem& p, int G, const GateContext& ctx) -> const PathRow* {
    for (const auto& r : *order)
      if (!r.supports(p, G, ctx)) return &r;
    return nullptr;
  };
  PathRow a{"auto", device.gpu ? "gpu" : "cpu",
            "dispatcher: the first path, in auto-rank order, whose gate says yes", doc, false,
            [pick](const Problem& p, int G, const GateContext& ctx) -> std::optional<std::string> {
              if (pick(p, G, ctx)) return std::nullopt;
              return std::string("no path's gate admits this problem");
            },
            [pick](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              const PathRow* r = pick(p, G, ctx);
              return std::make_unique<AutoExecution>(r->prepare(p, in, G, ctx), *r);
            }};
  // G=auto is resolved before auto picks a path: the rules count with the tile of the path auto
  // runs at each G (the first whose gate admits (problem, G)); 64 x 64 where none does.
  a.tiles = TileShape{64, 64};
  a.tile_at = [pick](const Problem& p, int G, const DeviceFacts& d) {
    GateContext ctx;
    ctx.device = d;
    const PathRow* r = pick(p, G, ctx);
    return r ? r->tile_for(p, G, d) : TileShape{64, 64};
  };
  return a;
}

}  // namespace fa
