"""The ping-pong consumer's barrier protocol (templates/consumer.cu.j2), model-checked on the CPU.

One producer fills a ring of S slots in tile order; two math warpgroups take the CTA's tiles in turn, each stepping its
ring cursor past the other's tiles, and a turn barrier per warpgroup orders them. Every wait is a parity wait as the
kernel's (mbarrier try_wait.parity: it passes once the phase of that parity has completed, so a waiter two phases
behind passes wrongly). Random interleavings of the three roles must never let a warpgroup read a slot before its fill
for that use, never let the producer refill a slot before its release, and always finish. Without the turn barrier the
checker finds the stale read the barrier exists for (docs/KERNEL_DESIGN.md, "The ping-pong consumer")."""

from __future__ import annotations

import random

import pytest


def _parity_passes(completed: int, parity: int) -> bool:
    """try_wait.parity: the barrier has completed `completed` phases; waiting for parity P passes once the current
    (incomplete) phase's parity differs from P."""
    return (completed & 1) != parity


def run_protocol(stages: int, tiles: int, k_blocks: int | list[int], seed: int, turns: bool = True,
                 early: int = 0) -> list[str]:
    """One random interleaving; the violations it met (empty: correct), or 'deadlock'. `k_blocks`: per tile (a list,
    as a k-grouped GEMM's groups, 0 for an empty one) or the same for all; `early`: hand the turn over that many
    k-blocks before the tile's last issue (the kernel: 0)."""
    kbs = list(k_blocks) if isinstance(k_blocks, list) else [k_blocks] * tiles
    rng = random.Random(seed)
    fills = [0] * stages  # full barriers: completed phases (fills)
    releases = [0] * stages  # empty barriers: completed phases (one warpgroup's release per use)
    turn_done = [0, 0]  # turn barriers: completed phases (hand-overs to warpgroup w)
    errors: list[str] = []
    # producer state: sequence number of the next k-block to load
    prod = {"q": 0}
    # consumer state per warpgroup: tile index, k-block in tile, ring cursor (sequence number), turn phase, pending
    cons = [{"tile": 0, "kb": 0, "seq": 0, "turn_phase": 0, "turns": 0, "first": w == 0, "waited_turn": False,
             "pending": []} for w in range(2)]
    total = sum(kbs)

    def producer() -> bool:
        q = prod["q"]
        if q >= total:
            return False
        s, use = q % stages, q // stages
        if not _parity_passes(releases[s], (use & 1) ^ 1):  # wait(empty, phase ^ 1): the slot's last use released
            return False
        if releases[s] < use:
            errors.append(f"producer refilled slot {s} for use {use} before use {use - 1} was released")
        fills[s] += 1
        prod["q"] += 1
        return True

    def advance(w: int) -> bool:
        c = cons[w]
        if c["tile"] >= tiles:
            return False
        if c["tile"] % 2 != w:  # the other warpgroup's tile: step the cursor past its k-blocks
            c["seq"] += kbs[c["tile"]]
            c["tile"] += 1
            return True
        if c["kb"] == 0 and c["pending"]:  # the tile before ended in wgmma_wait<0> and its last release
            return False
        if turns and not c["waited_turn"]:
            if not c["first"]:
                if not _parity_passes(turn_done[w], c["turn_phase"]):
                    return False
                if turn_done[w] < c["turns"] + 1:
                    errors.append(f"warpgroup {w} took turn {c['turns']} with {turn_done[w]} hand-overs (stale)")
                c["turn_phase"] ^= 1
                c["turns"] += 1
            c["first"] = False
            c["waited_turn"] = True
        tile_kb = kbs[c["tile"]]
        if tile_kb == 0:  # an empty group: the turn goes straight on (consumer.cu.j2: k_steps == 0)
            if turns:
                turn_done[w ^ 1] += 1
            c["waited_turn"] = False
            c["tile"] += 1
            return True
        q = c["seq"]
        s, use = q % stages, q // stages
        if not _parity_passes(fills[s], use & 1):
            return False
        if fills[s] != use + 1:
            errors.append(f"warpgroup {w} read slot {s} for use {use} with {fills[s]} fills done (stale)")
        c["pending"].append(s)  # the k-block's wgmma group in flight; its slot goes back once it retired
        c["seq"] += 1
        c["kb"] += 1
        if turns and c["kb"] == max(tile_kb - early, 1):  # the tile's last group issued: the other's turn
            turn_done[w ^ 1] += 1
        if c["kb"] == tile_kb:  # then its epilogue
            c["kb"], c["waited_turn"] = 0, False
            c["tile"] += 1
        return True

    def consumer(w: int) -> bool:
        pending = cons[w]["pending"]
        if pending and rng.random() < 0.5:  # a retired group's release, at any later point
            releases[pending.pop(0)] += 1
            return True
        if advance(w):
            return True
        if pending:
            releases[pending.pop(0)] += 1
            return True
        return False

    roles = [producer, lambda: consumer(0), lambda: consumer(1)]
    for _ in range(100_000):
        if prod["q"] >= total and all(c["tile"] >= tiles and not c["pending"] for c in cons):
            return errors
        order = rng.sample(roles, 3)
        if not any(role() for role in order):
            return [*errors, "deadlock"]
    return [*errors, "no progress"]


CASES = [(stages, tiles, kb) for stages in (3, 4, 5) for tiles in (1, 2, 3, 5, 8) for kb in (1, 2, 3, 4, 7)]


@pytest.mark.parametrize("stages,tiles,k_blocks", CASES)
def test_turns_keep_every_read_fresh_and_finish(stages: int, tiles: int, k_blocks: int) -> None:
    for seed in range(40):
        assert run_protocol(stages, tiles, k_blocks, seed) == [], (stages, tiles, k_blocks, seed)


def test_without_turns_a_warpgroup_reads_a_stale_slot() -> None:
    """The checker can fail: with the warpgroups free to start their tiles at once, the second one's parity wait on a
    slot two phases behind passes (here: 4 stages, 8-k-block tiles)."""
    found = [e for seed in range(200) for e in run_protocol(4, 4, 8, seed, turns=False)]
    assert any("stale" in e for e in found)


@pytest.mark.parametrize("stages", [3, 4, 5])
def test_the_turn_may_not_come_earlier_than_a_ring_before_the_end(stages: int) -> None:
    """The condition the hand-over keeps (a parity wait's slot has completed its previous phase): the other warpgroup's
    first slot was last filled for this tile's k-block KB - S, so the turn may pass once that wait has passed (S - 1
    k-blocks before the last issue) and not one k-block sooner. The kernel hands over at the last issue."""
    k_blocks = 8
    for early in range(stages):
        assert not any(run_protocol(stages, 6, k_blocks, seed, early=early) for seed in range(60)), early
    assert any("stale" in e for seed in range(300) for e in run_protocol(stages, 6, k_blocks, seed, early=stages))


@pytest.mark.parametrize("stages", [3, 4])
def test_turns_over_groups_of_any_k_blocks_and_empty_ones(stages: int) -> None:
    """k-grouped tiles: each tile its group's k-blocks, some groups empty (the turn passes straight on)."""
    for seed in range(300):
        rng = random.Random(seed)
        kbs = [rng.choice((0, 0, 1, 2, 3, 5, 9)) for _ in range(rng.randint(1, 9))]
        assert run_protocol(stages, len(kbs), kbs, seed) == [], (stages, kbs, seed)
