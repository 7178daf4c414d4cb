"""What a page's JS heap keeps: V8 heap snapshots taken through CDP, summed by kind of object, and compared.

Used by bench/browser_pages.py --heap-diff: one snapshot at the first 5-minute heap figure, one at the end. The
comparison prints, by constructor (or string, array, closure, code…), how the count and the bytes moved between the
two, and which objects of the second were made after the first and are still alive: what grows there and keeps
growing is retained. For each of the largest of those groups one retaining path is printed, so the owner is named.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

STRINGS = {"string", "concatenated string", "sliced string"}
WEAK_EDGES = {"weak", "shortcut"}


@dataclass
class Snapshot:
    """The nodes of a heap snapshot as columns, with the strings they name."""

    raw: dict
    fields: list[str] = field(init=False)
    types: list[str] = field(init=False)

    def __post_init__(self):
        meta = self.raw["snapshot"]["meta"]
        self.fields = meta["node_fields"]
        self.types = meta["node_types"][0]
        self.width = len(self.fields)
        self.nodes = self.raw["nodes"]
        self.strings = self.raw["strings"]
        self.count = len(self.nodes) // self.width
        at = {name: i for i, name in enumerate(self.fields)}
        self.f_type, self.f_name, self.f_id = at["type"], at["name"], at["id"]
        self.f_size, self.f_edges = at["self_size"], at["edge_count"]
        self.f_detached = at.get("detachedness")

    def node(self, index: int) -> tuple[str, str, int, int]:
        """(type, name, id, self size) of the index-th node."""
        base = index * self.width
        nodes = self.nodes
        return (self.types[nodes[base + self.f_type]], self.strings[nodes[base + self.f_name]],
                nodes[base + self.f_id], nodes[base + self.f_size])  # fmt: skip

    def group(self, index: int) -> str:
        kind, name, _, _ = self.node(index)
        if kind in STRINGS:
            return "(string)"
        if kind == "object":
            detached = self.f_detached is not None and self.nodes[index * self.width + self.f_detached] == 2
            return f"{name.split(' ', 1)[0]}{' (detached)' if detached else ''}"
        if kind in ("closure", "array"):
            return f"({kind}) {name[:40]}" if kind == "closure" else f"(array) {name[:40]}"
        return f"({kind})"

    def totals(self) -> dict[str, tuple[int, int]]:
        counts: Counter = Counter()
        sizes: Counter = Counter()
        for i in range(self.count):
            key = self.group(i)
            counts[key] += 1
            sizes[key] += self.nodes[i * self.width + self.f_size]
        return {key: (counts[key], sizes[key]) for key in counts}

    def ids(self) -> list[int]:
        return self.nodes[self.f_id :: self.width]

    def retainers(self) -> tuple[dict[int, list[tuple[int, str]]], list[int]]:
        """node index → [(retaining node index, edge name)], strong edges only; and each node's distance from the
        snapshot's root (breadth first, as DevTools counts it), so a path can walk towards the root."""
        edge_fields = self.raw["snapshot"]["meta"]["edge_fields"]
        edge_types = self.raw["snapshot"]["meta"]["edge_types"][0]
        ew = len(edge_fields)
        e_type, e_name, e_to = (edge_fields.index(n) for n in ("type", "name_or_index", "to_node"))
        edges = self.raw["edges"]
        back: dict[int, list[tuple[int, str]]] = defaultdict(list)
        forward: list[list[int]] = [[] for _ in range(self.count)]
        e = 0
        for i in range(self.count):
            for _ in range(self.nodes[i * self.width + self.f_edges]):
                kind = edge_types[edges[e + e_type]]
                if kind not in WEAK_EDGES:
                    name = edges[e + e_name]
                    label = str(name) if kind in ("element", "hidden") else self.strings[name]
                    to = edges[e + e_to] // self.width
                    back[to].append((i, label))
                    forward[i].append(to)
                e += ew
        distance = [1 << 30] * self.count
        distance[0] = 0
        frontier = [0]
        while frontier:
            following = []
            for i in frontier:
                for to in forward[i]:
                    if distance[to] > distance[i] + 1:
                        distance[to] = distance[i] + 1
                        following.append(to)
            frontier = following
        return back, distance


def take(page, path: Path) -> Snapshot:
    """A heap snapshot of the page after a forced GC, saved to path (opens in DevTools' Memory tab)."""
    cdp = page.context.new_cdp_session(page)
    chunks: list[str] = []
    cdp.on("HeapProfiler.addHeapSnapshotChunk", lambda event: chunks.append(event["chunk"]))
    cdp.send("HeapProfiler.enable")
    cdp.send("HeapProfiler.collectGarbage")
    cdp.send("HeapProfiler.takeHeapSnapshot", {"reportProgress": False})
    cdp.detach()
    text = "".join(chunks)
    path.write_text(text)
    return Snapshot(json.loads(text))


def _path(snapshot: Snapshot, back: dict, distance: list[int], index: int, depth: int = 10) -> str:
    """The shortest chain of retainers from a node towards the root (the window), as DevTools shows it."""
    steps, seen = [], {index}
    for _ in range(depth):
        options = [(r, label) for r, label in back.get(index, []) if r not in seen]
        if not options:
            break
        index, label = min(options, key=lambda o: distance[o[0]])
        seen.add(index)
        kind, name, _, _ = snapshot.node(index)
        steps.append(f"{label} ← {name[:40] or kind}")
    return " ← ".join(steps) or "(no retainer)"


def _owner(snapshot: Snapshot, back: dict, distance: list[int], index: int, depth: int = 12) -> str:
    """The nearest named object on the shortest path to the root and the property it holds the node by:
    "Chart.queue", "ClassHeatmap.gpus"; plain objects, arrays and the engine's internals are walked through."""
    seen = {index}
    for _ in range(depth):
        options = [(r, label) for r, label in back.get(index, []) if r not in seen]
        if not options:
            return "(no retainer)"
        index, label = min(options, key=lambda o: distance[o[0]])
        seen.add(index)
        kind, name, _, _ = snapshot.node(index)
        if kind == "object" and name not in ("Object", "Array", "system", "") and not name.startswith("system"):
            return f"{name.split(' ', 1)[0][:40]}.{label}"
    return "(deeper)"


def compare(first: Snapshot, second: Snapshot, top: int = 12) -> str:
    """The groups that grew from the first snapshot to the second, and what the second holds that is new."""
    before, after = first.totals(), second.totals()
    grown = []
    for key in set(before) | set(after):
        (count0, size0), (count1, size1) = before.get(key, (0, 0)), after.get(key, (0, 0))
        grown.append((key, count1 - count0, size1 - size0))
    grown.sort(key=lambda row: -row[2])
    total = sum(size for _, size in after.values()) - sum(size for _, size in before.values())
    lines = [f"  heap snapshot: {first.count} → {second.count} objects, {total / 1024:+.0f} KiB self size",
             "  grown most (count, KiB):"]  # fmt: skip
    lines += [f"    {count:+7d} {size / 1024:+9.1f}  {key}" for key, count, size in grown[:top] if size > 0]
    newest = max(first.ids())
    fresh: dict[str, list[int]] = defaultdict(list)
    for i in range(second.count):
        if second.nodes[i * second.width + second.f_id] > newest:
            fresh[second.group(i)].append(i)
    sizes = {key: sum(second.node(i)[3] for i in found) for key, found in fresh.items()}
    lines.append(f"  made after the first snapshot and alive: {sum(len(v) for v in fresh.values())} objects, "
                 f"{sum(sizes.values()) / 1024:.0f} KiB; largest groups, one retaining path each:")  # fmt: skip
    back, distance = second.retainers()
    for key in sorted(sizes, key=lambda k: -sizes[k])[:top]:
        found = fresh[key]
        owners = Counter(_owner(second, back, distance, i) for i in found)
        held = ", ".join(f"{owner} {count}" for owner, count in owners.most_common(3))
        lines.append(f"    {len(found):7d} {sizes[key] / 1024:9.1f}  {key}  (held by {held})")
        (owner, _), example = owners.most_common(1)[0], None
        example = next(i for i in found if _owner(second, back, distance, i) == owner)
        lines.append(f"              {_path(second, back, distance, example)}")
    return "\n".join(lines)
