"""Turn the hand-written drafts (draft/<stream>.txt: `mNNN: surface[>canonical]=kind; ...`)
into label files (<stream>.jsonl: id, start, end, canonical, kind), marking every whole-word,
case-sensitive occurrence of each surface in the memory, except inside a longer labelled
surface's occurrence (``Play`` inside ``Play App Signing`` is one mention, the longer one).
``resolve.py CORPUS [STREAM ...] [--labels blind]``: every draft, or only the streams named;
``--labels`` resolves another labelling of the same memories, ``<folder>/draft/`` into ``<folder>/``
(the blind re-label of the kept-aside streams: ``blind/``).
Reads the texts from the corpus, or from ``benchmarks/training_streams/`` for the
project's own streams."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from entities import stream_file  # noqa: E402  (where each labelled stream's texts are)


def main(corpus: Path, streams: list[str], labels: str = "") -> None:
    base = HERE / labels if labels else HERE
    for draft in sorted((base / "draft").glob("*.txt")):
        stream = draft.stem
        if streams and stream not in streams:
            continue
        texts = {}
        for line in stream_file(corpus, stream).open(encoding="utf-8"):
            row = json.loads(line)
            texts[row["id"]] = row["content"]
        out: list[dict] = []
        for line in draft.read_text(encoding="utf-8").splitlines():
            mid, _, rest = line.partition(":")
            text = texts[mid]
            out.append({"id": mid, "entities": []})
            items = []
            for item in filter(None, (x.strip() for x in rest.split(";"))):
                name, _, kind = item.rpartition("=")
                surface, _, canonical = name.partition(">")
                items.append((surface, canonical or surface, kind))
            taken: list[tuple[int, int]] = []
            for surface, canonical, kind in sorted(items, key=lambda i: -len(i[0])):
                pattern = re.compile(r"(?<![\w])" + re.escape(surface) + r"(?![\w])")
                hits = [m.span() for m in pattern.finditer(text)]
                if not hits:
                    sys.exit(f"{stream} {mid}: {surface!r} not found")
                for start, end in hits:
                    if any(s <= start and end <= e for s, e in taken):
                        continue  # part of a longer labelled mention
                    taken.append((start, end))
                    out[-1]["entities"].append(
                        {"start": start, "end": end, "canonical": canonical, "kind": kind}
                    )
        with (base / f"{stream}.jsonl").open("w", encoding="utf-8") as f:
            for row in out:
                row["entities"].sort(key=lambda e: e["start"])
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("corpus", type=Path, help="the corpus folder (with train/ and validation/)")
    ap.add_argument("streams", nargs="*", help="only these streams (default: every draft)")
    ap.add_argument(
        "--labels",
        default="",
        help="a folder of entity_labels/ holding another labelling (draft/ inside): resolve "
        "its drafts into it (default: the labels themselves)",
    )
    args = ap.parse_args()
    main(args.corpus, args.streams, args.labels)
