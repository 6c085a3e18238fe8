// The dispatcher row: candidates ordered by auto_rank (highest first); of those whose gate says yes,
// the fitted table's pick runs, else the first. Rows without a preparer (GPU paths not in this
// build) are never candidates.
#include "paths/auto_path.hpp"

#include <algorithm>
#include <memory>

#include "harness/split/split_rules.hpp"
#include "paths/wrapped_execution.hpp"

namespace fa {
namespace {

class AutoExecution : public WrappedExecution {
 public:
  AutoExecution(std::unique_ptr<Execution> inner, const PathRow& ran)
      : WrappedExecution(std::move(inner)),
        ran_(ran.name),
        rz_keys_(ran.rz_accumulate_keys),
        fp8_bits_(ran.fp8_accumulate_bits),
        fp8_p_(ran.fp8_p) {}
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    out.ran_path = ran_;
    out.rz_accumulate_keys = rz_keys_;  // the bias check admits the drift of the path that ran
    out.fp8_accumulate_bits = fp8_bits_;  // and the reference adds FP8 scores and rounds P as it does
    out.fp8_p = fp8_p_;
    return out;
  }

 private:
  std::string ran_;
  int rz_keys_, fp8_bits_;
  DType fp8_p_;
};

}  // namespace

DispatchChoice auto_dispatch(const DeviceFacts& device, const std::string& file) {
  return make_dispatch_choice(file, device.gpu ? device.arch : "");
}

PathRow auto_row(const std::vector<PathRow>& rows, const DeviceFacts& device, const DispatchChoice& dispatch) {
  auto order = std::make_shared<std::vector<PathRow>>();
  for (const auto& r : rows)
    if (r.auto_rank > 0 && r.prepare) order->push_back(r);
  std::stable_sort(order->begin(), order->end(),
                   [](const PathRow& a, const PathRow& b) { return a.auto_rank > b.auto_rank; });
  std::string doc;
  for (const auto& r : *order) doc += (doc.empty() ? "" : " > ") + r.name;

  auto pick = [order, table = dispatch.table](const Problem& p, int G, const GateContext& ctx) -> const PathRow* {
    std::vector<const PathRow*> admitted;
    for (const auto& r : *order)
      if (!r.supports(p, G, ctx)) admitted.push_back(&r);
    if (admitted.empty()) return nullptr;
    if (table) {
      auto find = [&](const std::string& name) -> const PathRow* {
        for (const PathRow* r : admitted)
          if (r->name == name) return r;
        return nullptr;
      };
      if (const auto fitted = dispatch_pick(*table, dispatch_key(p, G), [&](const std::string& n) { return find(n) != nullptr; }))
        return find(fitted->path);
    }
    return admitted.front();  // rank order: no table, or no timed problem took an admitted path
  };
  PathRow a{"auto", device.gpu ? "gpu" : "cpu",
            "dispatcher: of the paths whose gate says yes, the fastest on the nearest problem of the arch's fitted "
            "table (`fa-bench fit`), else the first in auto-rank order",
            doc, false,
            [pick](const Problem& p, int G, const GateContext& ctx) -> std::optional<std::string> {
              if (pick(p, G, ctx)) return std::nullopt;
              return std::string("no path's gate admits this problem");
            },
            [pick](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              const PathRow* r = pick(p, G, ctx);
              return std::make_unique<AutoExecution>(r->prepare(p, in, G, ctx), *r);
            }};
  // G=auto is resolved before auto picks a path: the rules count with the tile of the path auto
  // runs at each G (its pick among those whose gate admits (problem, G)); 64 x 64 where none does.
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
