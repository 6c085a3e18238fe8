// mma's sm_90 kernel's synchronisation protocol (kernels/mma/ws_pipeline.hpp) on the CPU: a
// simulation of its producer thread, its consumer warpgroups (2 or 3), with FP8 inputs its three
// V-transposing warps, and the TMA engine, under random interleavings, with mbarriers (arrivals,
// transaction bytes, phase parity) and named barriers modelled after the PTX ISA, and in a wave the
// item slots (one a Q stage, in which the producer publishes each of the block's items). The op
// lists below follow kernels/mma/fa_mma_ws_sm90.hpp step by step (keep them in step with it); the
// checks: no deadlock, a consumer reads a stage only when it holds the tile it expects, the TMA never
// overwrites a stage a warpgroup still reads, a reader finds in a slot the item it expects and the
// producer never overwrites a slot before every reader has read it, the warpgroups' GEMMs take turns
// round robin where the row takes turns, and every barrier ends balanced (no phase half done, no
// arrival pending) with every slot read.
// Run: ctest -R WsPipeline
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/device/tile_range.hpp"
#include "kernels/mma/ws_pipeline.hpp"

using namespace fa::ws;

namespace {

// An mbarrier: `pending` arrivals and `tx` bytes left in the current phase; `completed` phases.
struct MBar {
  int expected = 1, pending = 1, tx = 0, completed = 0;
  std::string error;
  void settle() {
    if (pending == 0 && tx == 0) ++completed, pending = expected;
  }
  void arrive() {
    if (--pending < 0) error = "more arrivals than the barrier expects";
    settle();
  }
  void arrive_expect_tx(int bytes) {
    tx += bytes;
    arrive();
  }
  void complete_tx(int bytes) {
    tx -= bytes;
    settle();
  }
  // mbarrier.try_wait.parity: true once the phase of that parity before the current one completed.
  bool try_wait(uint32_t parity) const { return uint32_t(completed & 1) != parity; }
};

// A named barrier of `count` threads (bar.sync waits for the generation its arrival completes).
struct NamedBar {
  int count = kSchedThreads, arrived = 0, generation = 0;
  int arrive(int threads) {
    const int g = generation;
    if ((arrived += threads) == count) arrived = 0, ++generation;
    return g;
  }
};

// vt: FP8's transposed V (ws_transpose_v); slot: a wave's item slot of a Q stage (WsSmem::item).
enum class Kind { q, k, v, vt, slot };

// write_slot / read_slot: one st.shared / ld.shared of a slot (Kind::slot, Q's stage `stage`), for
// the item the producer publishes k-th (`tile` = k, the closing -1 included); a read's `id` is the
// reader: the consumer warpgroup, or -1 for a transposing warp.
struct Op {
  enum Type {
    wait_mbar, arrive_mbar, load, begin_read, end_read, begin_write, end_write, bar_sync, bar_arrive, issue,
    write_slot, read_slot
  } type;
  Kind kind = Kind::k;
  int stage = 0, tile = 0, id = 0;
  bool full = true;  // wait_mbar / arrive_mbar: the stage's full or empty barrier
  uint32_t parity = 0;
};

struct Sim {
  int wgs, stages, ntiles;
  std::vector<MBar> q_full, q_empty;    // Q's ring: q_stages stages
  std::vector<int> q_tile, q_readers;  // the item whose Q a stage holds; warpgroups reading it
  std::vector<MBar> k_full, k_empty, v_full, v_empty, vt_full, vt_empty;
  NamedBar named[1 + kMaxConsumerWgs];
  std::vector<int> k_tile, v_tile, vt_tile;          // the tile a stage holds (-1: none)
  std::vector<int> k_readers, v_readers, vt_readers;  // warpgroups (or transposing warps) reading a stage now
  std::vector<int> vt_writers;                       // transposing warps writing a V^T stage now
  // A wave's item slots, one a Q stage: the k each was last written for (-1: none), and the readers
  // yet to read it. Every consumer warpgroup reads each slot, and with FP8 every transposing warp.
  std::vector<int> slot, slot_due;
  int slot_readers;
  struct Job {
    Kind kind;
    int stage, tile;
  };
  std::vector<Job> tma;  // copies in flight
  std::vector<std::pair<int, int>> issues;  // (warpgroup, t) in the order the GEMMs were issued
  std::string error;

  Sim(int w, int s, int n, bool fp8 = false, int q_stages = 1)
      : wgs(w), stages(s), ntiles(n), q_full(size_t(q_stages)), q_empty(size_t(q_stages)),
        q_tile(size_t(q_stages), -1), q_readers(size_t(q_stages), 0), k_full(s), k_empty(s), v_full(s), v_empty(s),
        vt_full(s), vt_empty(s), k_tile(s, -1), v_tile(s, -1), vt_tile(s, -1), k_readers(s, 0), v_readers(s, 0),
        vt_readers(s, 0), vt_writers(s, 0), slot(size_t(q_stages), -1), slot_due(size_t(q_stages), 0),
        slot_readers(w + (fp8 ? kTransposeWarps : 0)) {
    for (MBar& b : q_empty) b.expected = b.pending = q_empty_arrivals(wgs, fp8);
    for (MBar& b : k_empty) b.expected = b.pending = empty_arrivals(wgs);
    for (MBar& b : v_empty) b.expected = b.pending = v_empty_arrivals(wgs, fp8);
    for (MBar& b : vt_full) b.expected = b.pending = kTransposeWarps;
    for (MBar& b : vt_empty) b.expected = b.pending = empty_arrivals(wgs);
  }
  MBar& bar(Kind k, int st, bool full) {
    if (k == Kind::q) return full ? q_full[size_t(st)] : q_empty[size_t(st)];
    if (k == Kind::k) return full ? k_full[st] : k_empty[st];
    if (k == Kind::vt) return full ? vt_full[st] : vt_empty[st];
    return full ? v_full[st] : v_empty[st];
  }
  int& tile_at(Kind k, int st) {
    if (k == Kind::q) return q_tile[size_t(st)];
    return (k == Kind::k ? k_tile : k == Kind::vt ? vt_tile : v_tile)[size_t(st)];
  }
  int& readers_at(Kind k, int st) {
    if (k == Kind::q) return q_readers[size_t(st)];
    return (k == Kind::k ? k_readers : k == Kind::vt ? vt_readers : v_readers)[size_t(st)];
  }
};

constexpr int kTileBytes = 4096;  // any positive number: only its balance matters
constexpr char kSlotOverwritten[] = "the producer overwrites an item slot before every reader has read it";

// kernels/mma/fa_mma_ws_sm90.hpp's producer thread over a block's items (`items` holds each one's
// tiles). One item (not `wave`): ws_produce, its Q into stage 0 of Q's ring and the K/V ring in
// producer_load's order, then ws_drain, where it has tiles. A wave (ws_produce_wave): the item it
// publishes k-th (items without tiles and the closing -1 included) goes into the slot of Q's stage of
// k once q_empty's phase of k has completed (the readers of the item q_stages before are done with the
// slot and, where it had tiles, with its Q); then q_full's arrival: with the item's Q and its K/V
// loads (tiles counted on across items) where it has tiles, plain where it has none. Before the -1,
// ws_drain: the last Q's landing where no later item took its stage (the producer saw that stage
// released, and its parity no longer names the last Q's phase), and the last copy into each stage.
std::vector<Op> producer_ops(int stages, const std::vector<int>& items, bool wave, int q_stages = 1) {
  std::vector<Op> ops;
  const int end = int(items.size());  // the -1's k
  int tb = 0, last_q = -1;
  for (int k = 0;; ++k) {
    const int qs = stage_of(k, q_stages);
    if (wave) ops.push_back({Op::wait_mbar, Kind::q, qs, k, 0, false, empty_parity(k, q_stages)});
    if (k == end) break;
    const int n = items[size_t(k)];
    if (wave) ops.push_back({Op::write_slot, Kind::slot, qs, k});
    if (n == 0) {
      if (wave) ops.push_back({Op::arrive_mbar, Kind::q, qs, k, 0, true});
      continue;
    }
    ops.push_back({Op::load, Kind::q, qs, k});
    for (int i = 0; i < 2 * n; ++i) {
      const Load ld = producer_load(i, n);
      const Kind kk = ld.is_v ? Kind::v : Kind::k;
      const int t = tb + ld.tile, st = stage_of(t, stages);
      ops.push_back({Op::wait_mbar, kk, st, t, 0, false, empty_parity(t, stages)});
      ops.push_back({Op::load, kk, st, t});
    }
    tb += n, last_q = k;
  }
  if (last_q >= 0 && last_q + q_stages >= end)
    ops.push_back({Op::wait_mbar, Kind::q, stage_of(last_q, q_stages), last_q, 0, true, full_parity(last_q, q_stages)});
  for (int t = tb > stages ? tb - stages : 0; t < tb; ++t)
    for (Kind k : {Kind::k, Kind::v}) ops.push_back({Op::wait_mbar, k, stage_of(t, stages), t, 0, true, full_parity(t, stages)});
  if (wave) {
    ops.push_back({Op::write_slot, Kind::slot, stage_of(end, q_stages), end});
    ops.push_back({Op::arrive_mbar, Kind::q, stage_of(end, q_stages), end, 0, true});
  }
  return ops;
}
std::vector<Op> producer_ops(int stages, int n) { return producer_ops(stages, {n}, false); }

// kernels/mma/ws_produce_sm90.hpp, ws_transpose_v (FP8), for one of the kTransposeWarps warps: per tile,
// wait for V to land and for the consumers' release of the stage's V^T, read V and write V^T, then
// arrive on vt_full and on V's empty barrier. Over a block's items (one, or a wave's: tiles counted
// on across items); in a wave (ws_wave_items) each item's slot first, read once q_full's phase of its
// k has completed, then the warp's arrival on q_empty (it is done with the slot; the -1 ends the
// items without one), then the item's tiles.
std::vector<Op> transposer_ops(int stages, const std::vector<int>& items, bool wave, int q_stages = 1) {
  std::vector<Op> ops;
  const int end = int(items.size());
  int tb = 0;
  for (int k = 0; k <= end; ++k) {
    const int qs = stage_of(k, q_stages);
    if (wave) {
      ops.push_back({Op::wait_mbar, Kind::q, qs, k, 0, true, full_parity(k, q_stages)});
      ops.push_back({Op::read_slot, Kind::slot, qs, k, -1});
    }
    if (k == end) break;
    if (wave) ops.push_back({Op::arrive_mbar, Kind::q, qs, k, 0, false});
    const int n = items[size_t(k)];
    for (int t = tb; t < tb + n; ++t) {
      const int st = stage_of(t, stages);
      ops.push_back({Op::wait_mbar, Kind::v, st, t, 0, true, full_parity(t, stages)});
      ops.push_back({Op::wait_mbar, Kind::vt, st, t, 0, false, empty_parity(t, stages)});
      ops.push_back({Op::begin_read, Kind::v, st, t});
      ops.push_back({Op::begin_write, Kind::vt, st, t});
      ops.push_back({Op::end_write, Kind::vt, st, t});
      ops.push_back({Op::end_read, Kind::v, st, t});
      ops.push_back({Op::arrive_mbar, Kind::vt, st, t, 0, true});
      ops.push_back({Op::arrive_mbar, Kind::v, st, t, 0, false});
    }
    tb += n;
  }
  return ops;
}

// kernels/mma/fa_mma_ws_sm90.hpp, ws_consume, for consumer warpgroup cw over a block's items (one, or
// a wave's: tiles counted on across items, Q's stage and parities from the item's k). In a wave
// (ws_wave_items) each item's slot first, read once q_full's phase of its k has completed (the -1
// ends the items); Q's stage is released once the item's last S has landed, or at once where the
// item has no tiles. A release is its 4 warps' arrivals; a GEMM's reads of a stage (and of Q) last from
// its issue to the wait that shows them done. With FP8 inputs the consumers read V^T (Kind::vt)
// where they would read V. An issue is recorded as (warpgroup, the block's tile t of its S).
// `turns`: the warpgroups take turns issuing (ws_tile_traits.hpp's take_turns: the 16-bit rows);
// without (the FP8 rows) no named barrier is touched. `own` (the row's group_tiles, rows without
// turns): the tiles of each item this warpgroup computes (ws_pipeline.hpp's group_tiles, at most the
// item's); it releases the item's later tiles unread, each once its full barrier shows it landed
// (`drop_unread_waits` drops those waits, 1 K's, 2 V's, 3 both: the protocol broken, for the checks
// that must catch it).
std::vector<Op> consumer_ops(int cw, int wgs, int stages, const std::vector<int>& items, bool wave, bool fp8 = false,
                             int q_stages = 1, bool turns = true, const std::vector<int>* own = nullptr,
                             int drop_unread_waits = 0) {
  std::vector<Op> ops;
  const Kind vk = fp8 ? Kind::vt : Kind::v;
  auto wait_full = [&](Kind k, int t) { ops.push_back({Op::wait_mbar, k, stage_of(t, stages), t, 0, true, full_parity(t, stages)}); };
  auto stage = [&](Kind k, int t) { return stage_of(t, k == Kind::q ? q_stages : stages); };  // Q: t is the item
  auto release = [&](Kind k, int t) {
    for (int w = 0; w < 4; ++w) ops.push_back({Op::arrive_mbar, k, stage(k, t), t, 0, false});
  };
  auto read = [&](Op::Type ty, Kind k, int t) { ops.push_back({ty, k, stage(k, t), t}); };
  auto release_unread = [&](int from, int to) {  // tiles [from, to) of the block, past this warpgroup's keys
    for (int t = from; t < to; ++t) {
      if (!(drop_unread_waits & 1)) wait_full(Kind::k, t);
      release(Kind::k, t);
      if (!(drop_unread_waits & 2)) wait_full(vk, t);
      release(vk, t);
    }
  };
  const int end = int(items.size());
  int tb = 0;
  for (int qk = 0; qk <= end; ++qk) {
    if (wave) {
      ops.push_back({Op::wait_mbar, Kind::q, stage(Kind::q, qk), qk, 0, true, full_parity(qk, q_stages)});
      ops.push_back({Op::read_slot, Kind::slot, stage(Kind::q, qk), qk, cw});
    }
    if (qk == end) break;
    const int all = items[size_t(qk)], n = own ? (*own)[size_t(qk)] : all;
    if (n == 0) {
      if (wave) release(Kind::q, qk);
      release_unread(tb, tb + all);
      tb += all;
      continue;
    }
    ops.push_back({Op::wait_mbar, Kind::q, stage(Kind::q, qk), qk, 0, true, full_parity(qk, q_stages)});
    wait_full(Kind::k, tb);
    read(Op::begin_read, Kind::q, qk);
    read(Op::begin_read, Kind::k, tb);
    read(Op::end_read, Kind::q, qk);
    read(Op::end_read, Kind::k, tb);
    release(Kind::k, tb);
    if (wave && n == 1) release(Kind::q, qk);
    if (turns && sched_first_arrive(cw, n)) ops.push_back({Op::bar_arrive, Kind::q, 0, 0, sched_barrier(0)});
    for (int t = 1; t < n; ++t) {
      wait_full(Kind::k, tb + t);
      wait_full(vk, tb + t - 1);
      if (turns) ops.push_back({Op::bar_sync, Kind::q, 0, 0, sched_barrier(cw)});
      ops.push_back({Op::issue, Kind::q, 0, tb + t, cw});
      read(Op::begin_read, Kind::q, qk);
      read(Op::begin_read, Kind::k, tb + t);
      read(Op::begin_read, vk, tb + t - 1);
      if (turns && sched_arrive_after(cw, t, n, wgs))
        ops.push_back({Op::bar_arrive, Kind::q, 0, 0, sched_barrier(sched_next(cw, wgs))});
      read(Op::end_read, Kind::q, qk);
      read(Op::end_read, Kind::k, tb + t);  // wgmma.wait_group 1: S_t done
      release(Kind::k, tb + t);
      if (wave && t == n - 1) release(Kind::q, qk);
      read(Op::end_read, vk, tb + t - 1);  // wgmma.wait_group 0: P V done
      release(vk, tb + t - 1);
    }
    wait_full(vk, tb + n - 1);
    read(Op::begin_read, vk, tb + n - 1);
    read(Op::end_read, vk, tb + n - 1);
    release(vk, tb + n - 1);
    release_unread(tb + n, tb + all);
    tb += all;
  }
  return ops;
}

struct Actor {
  std::vector<Op> ops;
  size_t pc = 0;
  int waiting_generation = -1;  // inside a bar.sync: the generation its arrival belongs to
  bool done() const { return pc == ops.size(); }
};

// One step of actor `a`, or false when it is blocked.
bool step(Sim& s, Actor& a) {
  const Op& op = a.ops[a.pc];
  switch (op.type) {
    case Op::wait_mbar:
      if (!s.bar(op.kind, op.stage, op.full).try_wait(op.parity)) return false;
      break;
    case Op::arrive_mbar: s.bar(op.kind, op.stage, op.full).arrive(); break;
    case Op::load:
      if (s.readers_at(op.kind, op.stage) > 0)
        s.error = op.kind == Kind::q ? "the TMA overwrites Q while a warpgroup still reads it"
                                     : "the TMA overwrites a stage a warpgroup still reads";
      for (const auto& j : s.tma)
        if (j.kind == op.kind && j.stage == op.stage) s.error = "two copies into one stage in flight";
      s.bar(op.kind, op.stage, true).arrive_expect_tx(kTileBytes);
      s.tma.push_back({op.kind, op.stage, op.tile});
      break;
    case Op::begin_read:
      if (s.tile_at(op.kind, op.stage) != op.tile)
        s.error = std::string(op.kind == Kind::q ? "a consumer reads Q" : "a consumer reads stage " + std::to_string(op.stage)) +
                  " for " + (op.kind == Kind::q ? "item " : "tile ") + std::to_string(op.tile) + " holding " +
                  std::to_string(s.tile_at(op.kind, op.stage));
      ++s.readers_at(op.kind, op.stage);
      break;
    case Op::end_read: --s.readers_at(op.kind, op.stage); break;
    case Op::begin_write:  // a transposing warp writes its share of V^T stage op.stage for tile op.tile
      if (s.vt_readers[size_t(op.stage)] > 0) s.error = "a transposing warp overwrites a V^T stage a warpgroup still reads";
      if (s.vt_writers[size_t(op.stage)]++ == 0) s.vt_tile[size_t(op.stage)] = -1;  // half written: no tile
      break;
    case Op::end_write:
      if (--s.vt_writers[size_t(op.stage)] == 0) s.vt_tile[size_t(op.stage)] = op.tile;  // the last share done
      break;
    case Op::bar_arrive: s.named[op.id].arrive(128); break;
    case Op::bar_sync:
      if (a.waiting_generation < 0) a.waiting_generation = s.named[op.id].arrive(128);
      if (s.named[op.id].generation == a.waiting_generation) return false;
      a.waiting_generation = -1;
      break;
    case Op::issue: s.issues.push_back({op.id, op.tile}); break;
    case Op::write_slot:  // every reader of the item published before in this stage must have read it
      if (s.slot_due[size_t(op.stage)] > 0) s.error = kSlotOverwritten;
      s.slot[size_t(op.stage)] = op.tile, s.slot_due[size_t(op.stage)] = s.slot_readers;
      break;
    case Op::read_slot:
      if (s.slot[size_t(op.stage)] != op.tile)
        s.error = (op.id < 0 ? std::string("a transposing warp") : "consumer warpgroup " + std::to_string(op.id)) +
                  " reads item slot " + std::to_string(op.stage) + " for item " + std::to_string(op.tile) +
                  " holding " + std::to_string(s.slot[size_t(op.stage)]);
      --s.slot_due[size_t(op.stage)];
      break;
  }
  ++a.pc;
  return true;
}

// Completes one TMA copy in flight (copy j): its tile lands, its bytes reach the full barrier.
void land(Sim& s, size_t j) {
  const Sim::Job job = s.tma[j];
  s.tma.erase(s.tma.begin() + long(j));
  s.tile_at(job.kind, job.stage) = job.tile;
  s.bar(job.kind, job.stage, true).complete_tx(kTileBytes);
}

struct Outcome {
  std::string error;                        // the first broken rule, or ""
  std::vector<std::pair<int, int>> issues;  // (warpgroup, t) in GEMM issue order
};

// The block's actors: the producer, then consumer warpgroups 0 .. wgs - 1 (and with FP8 inputs the
// transposing warps), over the block's items (`items`: each one's tiles; a wave's where `wave`).
// `own`: each warpgroup's own tiles of each item (consumer_ops), or every tile.
std::vector<Actor> block_actors(std::vector<Op> producer, int wgs, int stages, const std::vector<int>& items, bool wave,
                                bool fp8 = false, int q_stages = 1, bool turns = true,
                                const std::vector<std::vector<int>>* own = nullptr, int drop_unread_waits = 0) {
  std::vector<Actor> actors = {{std::move(producer)}};
  for (int cw = 0; cw < wgs; ++cw)
    actors.push_back({consumer_ops(cw, wgs, stages, items, wave, fp8, q_stages, turns, own ? &(*own)[size_t(cw)] : nullptr,
                                   drop_unread_waits)});
  if (fp8)
    for (int w = 0; w < kTransposeWarps; ++w) actors.push_back({transposer_ops(stages, items, wave, q_stages)});
  return actors;
}
std::vector<Actor> block_actors(std::vector<Op> producer, int wgs, int stages, int n, bool fp8 = false) {
  return block_actors(std::move(producer), wgs, stages, {n}, false, fp8);
}

// Runs a block's actors to the end under a seeded random interleaving of them and the TMA engine,
// then checks that every barrier ends balanced and every item slot was read by all its readers.
// q_empty ends balanced too: the producer neither waits for the -1's phase nor does anyone arrive on it.
// `slow`: an actor (its index) that moves only when no other can, bar one time in 16: a warp the
// hardware leaves unscheduled for long stretches, which a uniform choice almost never models.
Outcome run_actors(Sim& s, std::vector<Actor> actors, uint32_t seed, int slow = -1) {
  const int tma = int(actors.size());  // the choice that lands a copy
  std::mt19937 rng(seed);
  auto fail = [&](std::string e) { return Outcome{std::move(e), s.issues}; };
  for (;;) {
    std::vector<int> choices;  // the actors, and `tma` = the TMA engine landing a copy
    for (int i = 0; i < tma; ++i)
      if (!actors[size_t(i)].done()) choices.push_back(i);
    if (!s.tma.empty()) choices.push_back(tma);
    if (choices.empty()) break;
    std::shuffle(choices.begin(), choices.end(), rng);
    if (slow >= 0 && rng() % 16 != 0)
      std::stable_partition(choices.begin(), choices.end(), [&](int c) { return c != slow; });
    bool moved = false;
    for (int c : choices) {
      if (c == tma) land(s, std::uniform_int_distribution<size_t>(0, s.tma.size() - 1)(rng)), moved = true;
      else moved = step(s, actors[size_t(c)]);
      if (!s.error.empty()) return fail(s.error);
      if (moved) break;
    }
    if (!moved) return fail("deadlock");
  }
  for (auto* v : {&s.q_full, &s.q_empty})
    for (const MBar& b : *v) {
      if (!b.error.empty()) return fail(b.error);
      if (b.pending != b.expected || b.tx != 0) return fail("Q's barrier ends with a phase half done");
    }
  for (auto* v : {&s.k_full, &s.k_empty, &s.v_full, &s.v_empty, &s.vt_full, &s.vt_empty})
    for (const MBar& b : *v) {
      if (!b.error.empty()) return fail(b.error);
      if (b.pending != b.expected || b.tx != 0) return fail("an mbarrier ends with a phase half done");
    }
  for (int id = 1; id <= s.wgs; ++id)
    if (s.named[id].arrived != 0) return fail("named barrier " + std::to_string(id) + " ends with arrivals pending");
  for (int due : s.slot_due)
    if (due != 0) return fail("an item slot ends with readers due");
  return Outcome{"", s.issues};
}

// Runs one block of `wgs` consumer warpgroups to the end under a random interleaving of its actors
// and the TMA engine: one item of n tiles, or a wave's items (Q's ring of q_stages).
Outcome run(int wgs, int stages, const std::vector<int>& items, bool wave, uint32_t seed, bool fp8 = false,
            int q_stages = 1, bool turns = true) {
  int total = 0;
  for (int n : items) total += n;
  Sim s(wgs, stages, total, fp8, q_stages);
  std::vector<Op> producer = producer_ops(stages, items, wave, q_stages);
  return run_actors(s, block_actors(std::move(producer), wgs, stages, items, wave, fp8, q_stages, turns), seed);
}
Outcome run(int wgs, int stages, int n, uint32_t seed, bool fp8 = false, bool turns = true) {
  return run(wgs, stages, {n}, false, seed, fp8, 1, turns);
}

// Steps the actors (or lands the oldest copy) in a seeded random order until a rule breaks, all are
// done or stuck, or 100000 choices pass: whether a rule broke. For the checks that must fail.
bool breaks_a_rule(Sim& s, std::vector<Actor>& actors, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int guard = 0; guard < 100000 && s.error.empty(); ++guard) {
    const size_t c = rng() % (actors.size() + 1);
    if (c == actors.size()) {
      if (!s.tma.empty()) land(s, 0);
    } else if (!actors[c].done()) {
      step(s, actors[c]);
    }
  }
  return !s.error.empty();
}

// The GEMM issues round robin within each of a wave's items, tiles counted on across items: (warpgroup,
// t) for each tile t but an item's first.
std::vector<std::pair<int, int>> round_robin_issues(const std::vector<int>& items, int wgs) {
  std::vector<std::pair<int, int>> want;
  int tb = 0;
  for (int n : items) {
    for (int t = 1; t < n; ++t)
      for (int cw = 0; cw < wgs; ++cw) want.push_back({cw, tb + t});
    tb += n;
  }
  return want;
}

// A wave's FP8 block (2 consumer warpgroups, 2 stages, no turns) whose transposing warps do not
// arrive on q_empty: the kernel before ws::q_empty_arrivals counted them.
std::vector<Actor> wave_without_transposer_releases(const std::vector<int>& items, int q_stages) {
  std::vector<Actor> actors =
      block_actors(producer_ops(2, items, true, q_stages), 2, 2, items, true, /*fp8=*/true, q_stages, /*turns=*/false);
  for (size_t a = actors.size() - kTransposeWarps; a < actors.size(); ++a) {
    auto& ops = actors[a].ops;
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [](const Op& o) { return o.type == Op::arrive_mbar && o.kind == Kind::q; }),
              ops.end());
  }
  return actors;
}

}  // namespace

TEST(WsPipeline, RegisterBudgetsFitTheFileAndSetmaxnregsRules) {
  EXPECT_EQ(block_threads(2), 384);
  EXPECT_EQ(block_threads(3), 512);
  // consumers, the producer transposes FP8's V, D
  const std::tuple<int, bool, int> cases[] = {{2, false, 128}, {3, false, 64}, {2, true, 128}, {2, true, 256}, {3, true, 64}};
  for (const auto& [wgs, fp8, D] : cases) {
    const int prod = producer_regs(wgs, fp8, D), cons = consumer_regs(wgs, fp8, D);
    for (int r : {prod, cons}) EXPECT_TRUE(r % 8 == 0 && r >= 24 && r <= 256) << r;
    const int entry = entry_regs(wgs);  // __launch_bounds__(threads, 1)
    EXPECT_EQ(entry, wgs == 2 ? 168 : 128);
    // setmaxnreg moves registers inside the pool the block entered with: .inc waits for them, so a
    // split past the pool (not the file: 384 x 168 = 64512 of its 65536) hangs the consumers.
    EXPECT_LE(128 * prod + 128 * wgs * cons, register_pool(wgs)) << wgs << " consumers, transposing " << fp8 << ", D " << D;
    EXPECT_LE(prod, entry) << "setmaxnreg.dec lowers";
    EXPECT_GE(cons, entry) << "setmaxnreg.inc raises";
  }
}

TEST(WsPipeline, TheProducerLoadsEveryTileOnceWithKOneTileAheadOfV) {
  auto order = [](int n) {
    std::string o;
    for (int i = 0; i < 2 * n; ++i) {
      const Load ld = producer_load(i, n);
      o += (ld.is_v ? "V" : "K") + std::to_string(ld.tile) + " ";
    }
    return o;
  };
  EXPECT_EQ(order(1), "K0 V0 ");
  EXPECT_EQ(order(2), "K0 K1 V0 V1 ");
  EXPECT_EQ(order(4), "K0 K1 V0 K2 V1 K3 V2 V3 ");
}

TEST(WsPipeline, StagesAndParitiesWalkTheRing) {
  EXPECT_EQ(full_parity(0, 2), 0u);
  EXPECT_EQ(empty_parity(0, 2), 1u) << "a fresh empty barrier passes: the first pass waits for nothing";
  EXPECT_EQ(stage_of(5, 2), 1);
  EXPECT_EQ(full_parity(5, 2), 0u);
  EXPECT_EQ(full_parity(3, 3), 1u);
  EXPECT_EQ(empty_parity(3, 3), 0u);
}

// Without turns too: FP8's pre-pass instances (the V ring holds V^T, no transposer) run this protocol
// with the row's take_turns off.
TEST(WsPipeline, RandomInterleavingsNeverDeadlockReadStaleTilesOrOverwriteOnesInUse) {
  for (bool turns : {true, false})
    for (int wgs = 2; wgs <= kMaxConsumerWgs; ++wgs)
      for (int stages : {2, 3, 4})
        for (int n : {0, 1, 2, 3, 4, 5, 8, 13})
          for (uint32_t seed = 1; seed <= 200; ++seed) {
            ASSERT_EQ(run(wgs, stages, n, seed, /*fp8=*/false, turns).error, "")
                << wgs << " consumers, stages " << stages << ", " << n << " tiles, turns " << turns << ", seed " << seed;
          }
}

TEST(WsPipeline, WithFp8InputsTheTransposingWarpsNeitherDeadlockNorServeAStaleOrHalfWrittenVt) {
  for (int wgs : {2, 3})  // FP8 D = 64 transposes beside three consumer warpgroups
    for (int stages : {2, 3})
      for (int n : {0, 1, 2, 3, 5, 8, 13})
        for (uint32_t seed = 1; seed <= 200; ++seed) {
          for (bool turns : {false, true}) {  // the FP8 rows take no turns (take_turns)
            const Outcome o = run(wgs, stages, n, seed, /*fp8=*/true, turns);
            ASSERT_EQ(o.error, "") << wgs << " consumers, stages " << stages << ", " << n << " tiles, turns " << turns
                                   << ", seed " << seed;
          }
        }
}

TEST(WsPipeline, TheSimulationCatchesATransposerThatIgnoresTheConsumersRelease) {
  int caught = 0;
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    Sim s(2, 2, 6, true);
    std::vector<Actor> actors = block_actors(producer_ops(2, 6), 2, 2, 6, true);
    for (size_t a = actors.size() - kTransposeWarps; a < actors.size(); ++a) {
      auto& ops = actors[a].ops;  // drop the wait on vt_empty
      ops.erase(std::remove_if(ops.begin(), ops.end(), [](const Op& o) { return o.type == Op::wait_mbar && o.kind == Kind::vt; }),
                ops.end());
    }
    caught += breaks_a_rule(s, actors, seed);
  }
  EXPECT_GT(caught, 0);
}

TEST(WsPipeline, TheWarpgroupsTakeTurnsOnTheTensorCoresRoundRobin) {
  for (int wgs = 2; wgs <= kMaxConsumerWgs; ++wgs)
    for (int n : {2, 3, 7})
      for (uint32_t seed = 1; seed <= 50; ++seed) {
        const Outcome o = run(wgs, 2, n, seed);
        ASSERT_EQ(o.error, "");
        std::vector<std::pair<int, int>> want;
        for (int t = 1; t < n; ++t)
          for (int cw = 0; cw < wgs; ++cw) want.push_back({cw, t});
        EXPECT_EQ(o.issues, want) << wgs << " consumers, " << n << " tiles, seed " << seed;
      }
}

TEST(WsPipeline, AWavesBlockRunsItsItemsWithoutDeadlockStaleTilesOrAStaleQ) {
  // A block of a wave: items of 1..16 tiles (a split's range can be empty: 0 tiles, published all
  // the same), the ring's stages and parities running on across items, an item's Q loaded into its
  // stage once every warpgroup's last S of the item q_stages before has landed.
  const std::vector<std::vector<int>> blocks = {{4, 4, 4, 4, 4, 4}, {1, 1, 1}, {1, 3, 2, 1}, {16, 16}, {2},
                                                {3, 0, 2}, {0, 2, 2}, {2, 2, 0}, {5, 1, 0, 0, 1, 7}};
  for (int q_stages : {1, 2})  // Q's ring: ws_layout.hpp's ws_q_stages
    for (int wgs = 2; wgs <= kMaxConsumerWgs; ++wgs)
      for (int stages : {2, 3})
        for (const auto& items : blocks)
          for (uint32_t seed = 1; seed <= 100; ++seed) {
            const Outcome o = run(wgs, stages, items, /*wave=*/true, seed, /*fp8=*/false, q_stages);
            ASSERT_EQ(o.error, "") << wgs << " consumers, stages " << stages << ", Q stages " << q_stages
                                   << ", items of " << ::testing::PrintToString(items) << " tiles, seed " << seed;
            ASSERT_EQ(o.issues, round_robin_issues(items, wgs)) << ::testing::PrintToString(items) << ", seed " << seed;
          }
  for (int q_stages : {1, 2})
    for (uint32_t seed = 1; seed <= 100; ++seed)
      for (bool turns : {false, true})
        ASSERT_EQ(run(2, 2, {3, 1, 4}, true, seed, /*fp8=*/true, q_stages, turns).error, "") << "FP8, seed " << seed;
}

// group_tiles against the tile counts worked by hand: the key tiles holding a key that a warpgroup's
// last row sees (rows r see keys [0, r + Sk - S + 1) when causal), at most the item's.
TEST(WsPipeline, AWarpgroupsOwnTilesEndAtTheLastTileItsRowsSee) {
  const fa::KeyRange k192{0, 192}, k384{0, 384};
  // FP8 D = 64's 192 x 128 block at q0 = 0 (its last row sees 192 keys: 2 tiles): rows 0-63 see 64
  // keys (1 tile), 64-127 see 128 (1), 128-191 see 192 (2).
  EXPECT_EQ(group_tiles(1024, 1024, true, 0, 0, k192, 128, 2), 1);
  EXPECT_EQ(group_tiles(1024, 1024, true, 0, 1, k192, 128, 2), 1);
  EXPECT_EQ(group_tiles(1024, 1024, true, 0, 2, k192, 128, 2), 2);
  // At q0 = 192 (384 keys, 3 tiles): 256 keys (2), 320 (3), 384 (3).
  EXPECT_EQ(group_tiles(1024, 1024, true, 192, 0, k384, 128, 3), 2);
  EXPECT_EQ(group_tiles(1024, 1024, true, 192, 1, k384, 128, 3), 3);
  EXPECT_EQ(group_tiles(1024, 1024, true, 192, 2, k384, 128, 3), 3);
  // Not causal every row sees every key; the last q tile of S = 500 (q0 = 384) has warpgroup 2's rows
  // (512-575) all past S: none.
  EXPECT_EQ(group_tiles(500, 500, false, 384, 0, {0, 500}, 128, 4), 4);
  EXPECT_EQ(group_tiles(500, 500, false, 384, 1, {0, 500}, 128, 4), 4);
  EXPECT_EQ(group_tiles(500, 500, false, 384, 2, {0, 500}, 128, 4), 0);
  // Causal with S > Sk (S = 900, Sk = 200: row r sees r - 699 keys): at q0 = 576 rows 576-639 see
  // none, rows 704-767 see 68 (1 tile).
  EXPECT_EQ(group_tiles(900, 200, true, 576, 0, {0, 68}, 128, 1), 0);
  EXPECT_EQ(group_tiles(900, 200, true, 576, 2, {0, 68}, 128, 1), 1);
  // A split's range [128, 256) of a block whose last row sees 384 keys: 256 keys seen is the whole
  // split (1 tile), 99 keys none of it.
  EXPECT_EQ(group_tiles(2048, 2048, true, 192, 0, {128, 256}, 128, 1), 1);
  EXPECT_EQ(group_tiles(2048, 2048, true, 35, 0, {128, 256}, 128, 1), 0);
  // D = 128's 224-key tiles under 128-row blocks, S = Sk = 8192: warpgroup 0 stops a tile early
  // where a tile boundary falls between its last row and the block's, at 2 of every 7 q tiles
  // (q0 = 128 j repeats every 7 mod 224), the figure ws_tile_traits.hpp's group_tiles comment quotes.
  int early = 0;
  for (int j = 0; j < 64; ++j) {
    const int64_t q0 = 128 * j, keys = q0 + 128;
    const int n = int((keys + 223) / 224);
    const int own0 = group_tiles(8192, 8192, true, q0, 0, {0, keys}, 224, n);
    EXPECT_EQ(group_tiles(8192, 8192, true, q0, 1, {0, keys}, 224, n), n);
    EXPECT_TRUE(own0 == n || own0 == n - 1) << q0;
    if (j < 63) early += own0 < n;
  }
  EXPECT_EQ(early, 18) << "2 of every 7 of the first 63 q tiles";
}

// Against each of the warpgroup's rows one by one (harness/conventions.hpp's visible_keys), over the
// item's key range as the kernel takes it (tile_range.hpp's dense_block_split), on causal and dense
// problems, S above and below Sk, splits: a warpgroup's tiles hold every key one of its rows below S
// sees, and its last tile holds at least one (none where it sees none). The protocol also needs the
// block's last warpgroup with a row below S to compute every tile of the item: it waits for Q before
// releasing it, so Q's stage is never freed while its copy is in flight.
TEST(WsPipeline, AWarpgroupsOwnTilesHoldEveryKeyItsRowsSeeAndEndAtTheLastThatHoldsOne) {
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int wgs = 2 + int(rng() % 2), bm = 64 * wgs, bn = std::array<int, 3>{128, 160, 224}[rng() % 3];  // the FP8 rows' BN
    const int S = 1 + int(rng() % 3000), Sk = 1 + int(rng() % 3000), G = 1 + int(rng() % 4);
    const bool causal = rng() % 2;
    const int q0 = bm * int(rng() % uint32_t((S + bm - 1) / bm)), g = int(rng() % uint32_t(G));
    const fa::KeyRange kr = fa::gpu::tile::dense_block_split(S, Sk, causal, q0, bm, g, G, bn);
    const int ntiles = kr.end > kr.begin ? int((kr.end - kr.begin + bn - 1) / bn) : 0;
    const int last = std::min(wgs, (S - q0 + 63) / 64) - 1;  // the last warpgroup with a row below S
    for (int wg = 0; wg < wgs; ++wg) {
      const int own = group_tiles(S, Sk, causal, q0, wg, kr, bn, ntiles);
      int64_t seen_end = kr.begin;  // past the last key of the range one of its rows sees
      for (int r = q0 + 64 * wg; r < std::min(q0 + 64 * wg + 64, S); ++r)
        seen_end = std::max(seen_end, std::min(fa::visible_keys(r, S, Sk, causal), kr.end));
      const std::string at = "S " + std::to_string(S) + " Sk " + std::to_string(Sk) + " causal " +
                             std::to_string(causal) + " q0 " + std::to_string(q0) + " warpgroup " + std::to_string(wg) +
                             " split " + std::to_string(g) + "/" + std::to_string(G);
      ASSERT_TRUE(own >= 0 && own <= ntiles) << own << ", " << at;
      ASSERT_LE(seen_end, kr.begin + int64_t(own) * bn) << "a key its rows see lies past its tiles: " << at;
      if (own > 0) {
        ASSERT_GT(seen_end, kr.begin + int64_t(own - 1) * bn) << "its last tile holds no key it sees: " << at;
      }
      if (wg == last) {
        ASSERT_EQ(own, ntiles) << at;
      }
    }
  }
}

// The rows with group_tiles (no turns): a warpgroup that stops early releases the item's later tiles
// unread, and the ring, Q's stages and the slots go on as before.
TEST(WsPipeline, AWarpgroupThatStopsEarlyReleasesTheRestUnreadWithoutDeadlockOrAStaleTile) {
  struct Case {
    std::vector<int> items;
    std::vector<std::vector<int>> own;  // a warpgroup's own tiles of each item
  };
  const Case cases[] = {{{5}, {{2}, {5}, {5}}},
                        {{3}, {{0}, {1}, {3}}},
                        {{3, 2, 4, 1, 0, 3}, {{2, 1, 3, 1, 0, 2}, {3, 2, 4, 1, 0, 3}, {3, 2, 4, 1, 0, 3}}},
                        {{2, 2, 2, 2}, {{1, 1, 1, 1}, {1, 2, 1, 2}, {2, 2, 2, 2}}},
                        {{4, 1, 6}, {{0, 0, 0}, {0, 1, 5}, {4, 1, 6}}}};
  for (const Case& c : cases)
    for (int wgs = 2; wgs <= kMaxConsumerWgs; ++wgs) {
      std::vector<std::vector<int>> own(c.own.begin(), c.own.begin() + wgs);
      own.back() = c.items;  // the last warpgroup computes every tile
      for (bool wave : {false, true}) {
        if (!wave && c.items.size() > 1) continue;
        for (bool fp8 : {false, true})
          for (int stages : {2, 3})
            for (int q_stages : {1, 2})
              for (uint32_t seed = 1; seed <= 100; ++seed) {
                if (!wave && q_stages > 1) continue;
                int total = 0;
                for (int n : c.items) total += n;
                Sim s(wgs, stages, total, fp8, q_stages);
                const Outcome o = run_actors(s,
                                             block_actors(producer_ops(stages, c.items, wave, q_stages), wgs, stages,
                                                          c.items, wave, fp8, q_stages, /*turns=*/false, &own),
                                             seed);
                ASSERT_EQ(o.error, "") << wgs << " consumers, wave " << wave << ", FP8 " << fp8 << ", stages " << stages
                                       << ", Q stages " << q_stages << ", items " << ::testing::PrintToString(c.items)
                                       << ", own " << ::testing::PrintToString(own) << ", seed " << seed;
              }
      }
    }
}

// Releasing a tile unread before it has landed can count toward the stage's previous phase, while
// another warpgroup still reads the tile before: the TMA (or the transposer) then overwrites it.
// Caught with V's wait dropped, or both, with and without the FP8 transposer. K's alone is not, here:
// each unread tile follows a wait for the tile before's V, and the producer issues K_t before
// V_{t-1}, so that wait has already seen K's stage pass its previous phase. The kernel keeps K's wait
// for a warpgroup with no tile of the item, where no such wait comes first.
TEST(WsPipeline, TheSimulationCatchesAWarpgroupThatReleasesATileUnreadBeforeItLands) {
  const std::vector<int> items = {6};
  const std::vector<std::vector<int>> own = {{1}, {6}};
  for (int drop : {2, 3})
    for (bool fp8 : {false, true}) {
      int caught = 0;
      for (uint32_t seed = 1; seed <= 200; ++seed) {
        Sim s(2, 2, 6, fp8);
        std::vector<Actor> actors =
            block_actors(producer_ops(2, items, false), 2, 2, items, false, fp8, 1, /*turns=*/false, &own, drop);
        caught += breaks_a_rule(s, actors, seed);
      }
      EXPECT_GT(caught, 0) << "waits dropped " << drop << ", FP8 " << fp8;
    }
}

// Items without tiles (an empty split range) go through the slots like the others: published with a
// plain arrival on q_full, released by their readers at once, their stage then taken by the item
// q_stages on. A block may also have no item at all: its readers see the -1 first.
TEST(WsPipeline, AWavesItemsWithoutTilesArePublishedAndReleasedWithoutAStaleSlotOrDeadlock) {
  const std::vector<std::vector<int>> blocks = {{3, 0, 1, 0, 0, 2, 1}, {0, 1, 2}, {0, 0, 3}, {0, 0}, {0},
                                                {},  {2, 0},    {1, 0, 0}};
  for (int q_stages : {1, 2})
    for (int wgs = 2; wgs <= kMaxConsumerWgs; ++wgs)
      for (int stages : {2, 3})
        for (const auto& items : blocks)
          for (bool fp8 : {false, true})  // 16-bit rows take turns, FP8 rows transpose V and take none
            for (uint32_t seed = 1; seed <= 200; ++seed) {
              const Outcome o = run(wgs, stages, items, /*wave=*/true, seed, fp8, q_stages, /*turns=*/!fp8);
              ASSERT_EQ(o.error, "") << wgs << " consumers, stages " << stages << ", Q stages " << q_stages << ", FP8 "
                                     << fp8 << ", items of " << ::testing::PrintToString(items) << " tiles, seed "
                                     << seed;
              if (!fp8) {
                ASSERT_EQ(o.issues, round_robin_issues(items, wgs)) << ::testing::PrintToString(items);
              }
            }
}

// The consumers release a single-tile item's Q stage right after its S, before the transposing warps
// have made any of its V^T: only the transposing warps' own arrivals on q_empty keep the producer
// from writing the stage's next item before they have read this one. So also with a transposing warp
// left behind (run_actors's `slow`), the schedule that would expose a missing arrival.
TEST(WsPipeline, WithFp8InputsTheTransposingWarpsReadSingleTileItemsSlotsBeforeTheProducerReusesThem) {
  const std::vector<std::vector<int>> blocks = {{1, 1, 1, 1, 2}, {1, 1, 1, 1, 1, 1}, {1, 0, 1, 0, 1}};
  for (int q_stages : {1, 2})
    for (int wgs = 2; wgs <= kMaxConsumerWgs; ++wgs)
      for (int stages : {2, 3})
        for (const auto& items : blocks)
          for (bool slow : {false, true})
            for (uint32_t seed = 1; seed <= 200; ++seed) {
              Sim s(wgs, stages, 6, /*fp8=*/true, q_stages);
              std::vector<Actor> actors = block_actors(producer_ops(stages, items, true, q_stages), wgs, stages, items,
                                                       true, /*fp8=*/true, q_stages, /*turns=*/false);
              const int last_transposer = int(actors.size()) - 1;
              ASSERT_EQ(run_actors(s, std::move(actors), seed, slow ? last_transposer : -1).error, "")
                  << wgs << " consumers, stages " << stages << ", Q stages " << q_stages << ", items of "
                  << ::testing::PrintToString(items) << " tiles, a transposing warp left behind " << slow << ", seed "
                  << seed;
            }
}

// Transposing warps that do not arrive on q_empty where it counts them: the producer waits for the
// release of the item q_stages back forever.
TEST(WsPipeline, TheSimulationCatchesTransposingWarpsThatDoNotReleaseTheirSlotAsADeadlock) {
  const std::vector<int> items = {1, 1, 1, 1, 2};
  for (int q_stages : {1, 2})
    for (uint32_t seed = 1; seed <= 50; ++seed) {
      Sim s(2, 2, 6, true, q_stages);
      EXPECT_EQ(run_actors(s, wave_without_transposer_releases(items, q_stages), seed).error, "deadlock")
          << "Q stages " << q_stages << ", seed " << seed;
    }
}

// Transposing warps that do not arrive on q_empty, and q_empty counting the consumers' warps only:
// the producer then rewrites a single-tile item's slot once the consumers have their S, and a
// transposing warp that has not read it yet would take the next item for this one. A transposing
// warp left behind (run_actors's `slow`) exposes it; a uniform choice hardly ever does, as the
// consumers wait for every transposing warp's last V^T of an item before they read the next slot.
TEST(WsPipeline, TheSimulationCatchesASlotOverwrittenBeforeATransposingWarpReadIt) {
  const std::vector<int> items = {1, 1, 1, 1, 2};
  for (int q_stages : {1, 2}) {
    uint32_t found = 0;
    for (uint32_t seed = 1; seed <= 1000 && found == 0; ++seed) {
      Sim s(2, 2, 6, true, q_stages);
      for (MBar& b : s.q_empty) b.expected = b.pending = empty_arrivals(2);
      std::vector<Actor> actors = wave_without_transposer_releases(items, q_stages);
      const int last_transposer = int(actors.size()) - 1;
      const Outcome o = run_actors(s, std::move(actors), seed, last_transposer);
      ASSERT_TRUE(o.error.empty() || o.error == kSlotOverwritten) << o.error << ", seed " << seed;
      if (!o.error.empty()) found = seed;
    }
    EXPECT_GT(found, 0u) << "no seed of 1000 overwrote a slot, Q stages " << q_stages;
  }
}

// A producer that writes the next item's slot without waiting for q_empty: with items without tiles
// no Q or K/V copy gives it away, so the slot's own check must.
TEST(WsPipeline, TheSimulationCatchesAProducerThatWritesASlotBeforeItsReadersAreDone) {
  const std::vector<int> items = {0, 0, 0, 0, 0};
  for (int q_stages : {1, 2})
    for (bool fp8 : {false, true}) {
      int caught = 0;
      for (uint32_t seed = 1; seed <= 100; ++seed) {
        Sim s(2, 2, 0, fp8, q_stages);
        std::vector<Op> prod = producer_ops(2, items, true, q_stages);
        prod.erase(std::remove_if(prod.begin(), prod.end(),
                                  [](const Op& o) { return o.type == Op::wait_mbar && o.kind == Kind::q && !o.full; }),
                   prod.end());
        const Outcome o = run_actors(s, block_actors(prod, 2, 2, items, true, fp8, q_stages, !fp8), seed);
        caught += o.error == kSlotOverwritten;
      }
      EXPECT_GT(caught, 0) << "Q stages " << q_stages << ", FP8 " << fp8;
    }
}

// ws_drain waits for the last Q only where no later item took its stage: where one did (an item
// without tiles), its plain arrival moved the stage's q_full on, the parity names a phase still to
// come, and the wait never returns.
TEST(WsPipeline, TheSimulationCatchesADrainThatWaitsForAQStageALaterItemTook) {
  const std::vector<int> items = {1, 0};
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Sim s(2, 2, 1);
    std::vector<Op> prod = producer_ops(2, items, true);
    // A wait for item 0's Q (stage 0, which item 1 took) just before the -1's write.
    const auto minus_one =
        std::find_if(prod.rbegin(), prod.rend(), [](const Op& o) { return o.type == Op::write_slot; });
    prod.insert(minus_one.base() - 1, {Op::wait_mbar, Kind::q, 0, 0, 0, true, full_parity(0, 1)});
    EXPECT_EQ(run_actors(s, block_actors(prod, 2, 2, items, true), seed).error, "deadlock") << "seed " << seed;
  }
}

TEST(WsPipeline, TheSimulationCatchesAProducerThatReloadsQBeforeTheConsumersReleaseIt) {
  for (int q_stages : {1, 2}) {
    int caught = 0;
    for (uint32_t seed = 1; seed <= 100; ++seed) {
      // One-tile items: the ring's first pass waits for nothing, so only Q's release holds the
      // producer back from the stage of an item the consumers still read.
      const std::vector<int> items = {1, 1, 1, 1, 2};
      Sim s(2, 2, 6, false, q_stages);
      std::vector<Op> prod = producer_ops(2, items, true, q_stages);
      prod.erase(std::remove_if(prod.begin(), prod.end(),
                                [](const Op& o) { return o.type == Op::wait_mbar && o.kind == Kind::q && !o.full; }),
                 prod.end());
      std::vector<Actor> actors = block_actors(prod, 2, 2, items, true, false, q_stages);
      caught += breaks_a_rule(s, actors, seed);
    }
    EXPECT_GT(caught, 0) << "Q stages " << q_stages;
  }
}

TEST(WsPipeline, TheSimulationCatchesABrokenProtocol) {
  // A producer that does not wait for the consumers' release overwrites a stage in use (or lets a
  // consumer read a later tile): the checks above can fail.
  int caught = 0;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    Sim s(2, 2, 6);
    std::vector<Op> prod = producer_ops(2, 6);
    prod.erase(std::remove_if(prod.begin(), prod.end(), [](const Op& o) { return o.type == Op::wait_mbar; }), prod.end());
    std::vector<Actor> actors = block_actors(prod, 2, 2, 6);
    std::mt19937 rng(seed);
    for (int guard = 0; guard < 100000 && s.error.empty(); ++guard) {
      const int c = int(rng() % 4);
      if (c == 3) {
        if (!s.tma.empty()) land(s, 0);
      } else if (!actors[size_t(c)].done()) {
        step(s, actors[size_t(c)]);
      }
    }
    caught += !s.error.empty();
  }
  EXPECT_GT(caught, 0);
}
