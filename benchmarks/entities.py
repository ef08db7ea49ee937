"""Entity extraction without an LLM against the hand labels of benchmarks/entity_labels/.

Each stream's names, systems, file paths and releases are passed to the extraction as known
names, as the engine keeps them.
Prints precision / recall / F1 per stream (span match and canonical-name match), for the tuning
streams, the fresh ones (labelled, not yet tuned on) and the kept-aside streams apart, and
"which episodes touched X" answered from the extracted entities against a keyword search of X's
canonical name.

    python benchmarks/entities.py ../shared/corpus [--write | --tuning-only]
    python benchmarks/entities.py ../shared/corpus --kept-aside-labels blind
    python benchmarks/entities.py ../shared/corpus --second-labels blind2

``--second-labels FOLDER`` (``blind2``): for the streams labelled a second time, blind to the
first labels, in ``entity_labels/FOLDER/``, the extraction against both and their agreement.

``--kept-aside-labels FOLDER`` scores the kept-aside streams against another labelling of the
same memories (``entity_labels/FOLDER/``: ``blind/``, re-labelled blind from the guideline) and
prints how far that labelling agrees with the labels (taken as gold).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from tribalmemory.entities import Entity, canonical, extract_entities
from tribalmemory.entities.acronyms import kind_words
from tribalmemory.entities.confidence import sure_model
from tribalmemory.episodes.store.entities import is_known_path, is_known_release

LABELS = Path(__file__).resolve().parent / "entity_labels"
TUNING = (
    "synth-payments-backend",
    "synth-game-studio",
    "synth-mobile-app",
    "synth-devtools-startup",
    "synth-ecommerce-frontend",
    "episodes-dev",
    "synth-security-team",
    "synth-health-integration",
    "synth-consultancy-solo",
    "synth-analytics-eng",
    "synth-k8s-platform",
    "synth-robotics-lab",
    "synth-fintech-compliance",
    "synth-solo-gamedev",
    "synth-data-platform",
    "synth-sre-oncall",
    "synth-firmware-team",
    "synth-ml-research",
    "synth-docs-devrel",
    "synth-genomics-core",
    "synth-network-eng",
    "synth-insurance-claims",
    "synth-edtech-lms",
    "synth-grid-scada",
    "synth-logistics-dispatch",
    "synth-video-platform",
    "synth-ev-charging",
    "synth-chip-verification",
    "synth-adtech-bidding",
    "synth-legaltech-contracts",
    "synth-avionics-flightsw",
    "synth-telecom-5gcore",
    "synth-retail-stores",
    "synth-hotel-booking",
    "synth-clinical-trials",
    "synth-transit-gtfs",
    "synth-audio-plugins",
    "synth-mainframe-banking",
    "synth-sports-betting",
    "synth-port-terminal",
    "synth-automotive-autosar",
    "synth-satellite-groundseg",
    "synth-vet-clinics",
    "synth-mining-geodata",
    "synth-hpc-climate",
    "synth-newsroom-cms",
    "synth-energy-trading",
    "synth-agritech-irrigation",
    "synth-game-liveops",
    "synth-payroll-hr",
    "synth-pharmacy-chain",
    "synth-construction-bim",
    "synth-airline-ops",
    "synth-proptech-listings",
    "synth-library-archives",
    "synth-nonprofit-fundraising",
    "synth-broadcast-radio",
    "synth-smart-building",
    "synth-manufacturing-mes",
    "synth-gov-tax-portal",
    "synth-quant-research",
    "synth-railway-signalling",
    "synth-wind-farm-ops",
    "synth-book-publishing",
    "synth-customs-brokerage",
    "synth-trust-safety",
    "synth-vfx-pipeline",
    "synth-water-utility",
    "synth-crypto-exchange",
    "synth-oil-gas-seismic",
    "synth-hospital-radiology",
    "synth-semiconductor-fab",
    "synth-telecom-billing",
    "synth-restaurant-chain",
    "synth-aircraft-mro",
    "synth-bioprocess-cmc",
    "synth-cloud-finops",
    "synth-municipal-gis",
)
VALIDATION: tuple[str, ...] = (
    "synth-actuarial-pricing",
    "synth-humanitarian-logistics",
    "synth-university-registrar",
    "synth-shipping-fleet",
)
"""Streams labelled blind and never tuned on (no rule was written from their errors) that
choose the sure model's threshold (``fit_entity_confidence.py``): reported apart."""
FRESH: tuple[str, ...] = (
    "synth-elections-office",
    "synth-auction-house",
    "synth-dairy-coop",
    "synth-ski-resort",
)
"""Streams labelled but not yet tuned on: their first score, held out for the rules as they
stand, is reported apart (with the tuning streams under ``--tuning-only``); then they join
:data:`TUNING`."""
ASIDE = ("synth-solo-oss", "synth-support-agents")
TRAINING = Path(__file__).resolve().parent / "training_streams"
OWN = frozenset(p.stem for p in TRAINING.glob("synth-*.jsonl"))
"""The project's own made-up streams (every ``synth-*.jsonl`` of ``benchmarks/training_streams/``):
a labelled one is read from there, not from the corpus."""
BESIDE = {"episodes-dev": "../datasets"}
"""Labelled streams not in the corpus: the team stream of ../shared/datasets/, beside it."""
PARTS = {s: BESIDE.get(s, "train") for s in TUNING if s not in OWN} | dict.fromkeys(
    ASIDE, "validation"
)
"""The folder of each labelled stream under the corpus: tuned on train/ (and the team stream
beside the corpus), kept aside from validation/."""


def stream_file(corpus: Path, stream: str) -> Path:
    """Where a labelled stream's texts are: the project's own in ``benchmarks/training_streams/``
    (:data:`OWN`), the others in their folder of the corpus (:data:`PARTS`)."""
    if stream in OWN:
        return TRAINING / f"{stream}.jsonl"
    return corpus / PARTS[stream] / f"{stream}.jsonl"


def label_file(stream: str, kept_aside_labels: str = "") -> Path:
    """A stream's labels: a kept-aside stream's from ``entity_labels/<kept_aside_labels>/`` when
    given (another labelling of the same memories), else from ``entity_labels/``."""
    if kept_aside_labels and stream in ASIDE:
        return LABELS / kept_aside_labels / f"{stream}.jsonl"
    return LABELS / f"{stream}.jsonl"


def load(corpus: Path, stream: str, kept_aside_labels: str = "") -> list[dict]:
    rows = {}
    for line in stream_file(corpus, stream).open(encoding="utf-8"):
        row = json.loads(line)
        rows[row["id"]] = row
    out = []
    for line in label_file(stream, kept_aside_labels).open(encoding="utf-8"):
        label = json.loads(line)
        out.append({**rows[label["id"]], "gold": label["entities"]})
    return out


def prf(tp: int, found: int, gold: int) -> tuple[float, float, float]:
    p = tp / found if found else 1.0
    r = tp / gold if gold else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def teaches(e: Entity) -> str | None:
    """What a found entity adds to the project's known set, as the store's ``known()`` keeps
    it: a name as written, a system, a known path or release by its canonical name."""
    if e.kind == "name":
        return e.text
    if e.kind == "system" or is_known_path(e.name, e.kind) or is_known_release(e.name, e.kind):
        return e.name
    return None


def taught(rows: list[dict]) -> frozenset[str]:
    """The corpus statistics passed to the extraction, as the engine keeps them: names the
    stream writes (capitalised inside a sentence, then also found opening a sentence), systems
    (canonical: ``pw-api``, whose first part then starts kin systems), paths of
    files in a folder (then also named by their bare file name) and releases of three parts or
    four (then also named by their first two: ``5.12`` of ``v5.12.0``), by the store's own
    tests (:func:`is_known_path`, :func:`is_known_release`). The paths and releases are
    learned first, and the names then with them known, as the engine finds a memory's names
    with the paths of the memories before it (a pair of capitalised folders, ``Engine/Physics``,
    is a path once ``Engine/Core/Math.h`` is known, not two names). The acronyms the stream
    uses as a kind of thing (:func:`kind_words`, as their plural: ``NRFs``) are known from the
    start."""
    seen = {word + "s" for row in rows for word in kind_words(row["content"])}
    for row in rows:
        for e in extract_entities(row["content"]):
            if is_known_path(e.name, e.kind) or is_known_release(e.name, e.kind):
                seen.add(e.name)
    paths = frozenset(seen)
    for row in rows:
        seen |= {t for e in extract_entities(row["content"], paths) if (t := teaches(e))}
    return frozenset(seen)


def extracted(rows: list[dict]) -> dict[str, list]:
    known = taught(rows)
    return {row["id"]: extract_entities(row["content"], known) for row in rows}


def with_known(rows: list[dict], found: dict[str, list]) -> Iterator[tuple[dict, list, set[str]]]:
    """Each memory, its found entities and what the memories before it taught the project, as
    the engine's known set holds it when this memory's entities are found and judged (names as
    written, systems, known paths and releases): the sure model's ``known``."""
    known: set[str] = set()
    for row in rows:
        entities = found[row["id"]]
        yield row, entities, known
        known |= {t for e in entities if (t := teaches(e))}


def sure_spans(rows: list[dict], found: dict[str, list]) -> dict[str, set[tuple[int, int]]]:
    """Each memory's found spans that the sure model is sure of
    (:mod:`tribalmemory.entities.confidence`)."""
    model = sure_model()
    return {
        row["id"]: {
            (e.start, e.end)
            for e, sure in zip(entities, model.sure(row["content"], entities, known), strict=True)
            if sure
        }
        for row, entities, known in with_known(rows, found)
    }


Counts = dict[str, tuple[int, int, int]]
"""(matched, found, gold) counts of spans (``span``), canonical names (``name``) and the spans
the sure model is sure of (``sure``)."""
Mentions = tuple[set[tuple[int, int]], set[str]]
"""One memory's entities as spans and as canonical names."""


def tally(memories: Iterable[tuple[tuple[set, ...], Mentions]]) -> Counts:
    """:data:`Counts` of found against gold entities, memory by memory (``sure``: when the
    found entities have a third part, the sure spans)."""
    counts: dict[str, list[int]] = {}
    for found, gold in memories:
        pairs = [("span", found[0], gold[0]), ("name", found[1], gold[1])]
        pairs += [("sure", found[2], gold[0])] if len(found) > 2 else []
        for key, a, b in pairs:
            count = counts.setdefault(key, [0, 0, 0])
            count[0] += len(a & b)
            count[1] += len(a)
            count[2] += len(b)
    return {k: (v[0], v[1], v[2]) for k, v in counts.items()}


def summed(parts: Sequence[Counts]) -> Counts:
    """The :data:`Counts` of several streams together."""
    out: Counts = {}
    for key in parts[0] if parts else ():
        matched, found, gold = (sum(part[key][i] for part in parts) for i in range(3))
        out[key] = (matched, found, gold)
    return out


def labelled(entities: list[dict]) -> Mentions:
    """A label row's entities as spans and canonical names."""
    return {(g["start"], g["end"]) for g in entities}, {canonical(g["canonical"]) for g in entities}


def score(rows: list[dict]) -> Counts:
    found = extracted(rows)
    sure = sure_spans(rows, found)
    return tally(
        (
            (
                {(e.start, e.end) for e in found[row["id"]]},
                {e.name for e in found[row["id"]]},
                sure[row["id"]],
            ),
            labelled(row["gold"]),
        )
        for row in rows
    )


def agreement(gold: list[dict], other: list[dict]) -> Counts:
    """Two labellings of the same memories (label rows: id, entities), the second taken as
    predicted against the first as gold: :data:`Counts`, memory by memory."""
    theirs = {row["id"]: row["entities"] for row in other}
    return tally((labelled(theirs.get(row["id"], [])), labelled(row["entities"])) for row in gold)


def agreement_report(kept_aside_labels: str) -> str:
    """How far the kept-aside streams' other labelling (as predicted) agrees with their labels
    (as gold), per stream and together."""
    return agreement_table(kept_aside_labels, ASIDE)


def agreement_table(folder: str, streams: Sequence[str]) -> str:
    """How far the streams' labelling in ``entity_labels/<folder>/`` (as predicted) agrees with
    their labels (as gold), per stream and together."""
    lines = [
        f"Agreement of `{folder}/` (as predicted) with the labels (as gold):",
        "",
        "| stream | memories | span P | span R | span F1 | name P | name R | name F1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    parts: list[Counts] = []
    size = 0
    for stream in streams:
        gold, other = (
            [json.loads(line) for line in path.open(encoding="utf-8")]
            for path in (LABELS / f"{stream}.jsonl", LABELS / folder / f"{stream}.jsonl")
        )
        parts.append(agreement(gold, other))
        size += len(gold)
        lines.append(agreement_row(stream, len(gold), parts[-1]))
    lines.append(agreement_row("all", size, summed(parts)))
    return "\n".join(lines)


def second_labels_report(corpus: Path, folder: str) -> str:
    """For the streams a second labelling in ``entity_labels/<folder>/`` covers (labelled blind
    to the first): the extraction scored against each labelling, and the two labellings'
    agreement, which bounds what a score against one of them can show."""
    streams = [
        s for s in TUNING + VALIDATION + FRESH + ASIDE if (LABELS / folder / f"{s}.jsonl").is_file()
    ]
    lines = [
        f"| stream | memories | span P / R against the labels | span P / R against `{folder}/` |",
        "|---|---:|---:|---:|",
    ]
    firsts: list[Counts] = []
    seconds: list[Counts] = []
    size = 0
    for stream in streams:
        rows = load(corpus, stream)
        second = {
            row["id"]: row["entities"]
            for row in map(json.loads, (LABELS / folder / f"{stream}.jsonl").open(encoding="utf-8"))
        }
        firsts.append(score(rows))
        seconds.append(score([{**row, "gold": second.get(row["id"], [])} for row in rows]))
        size += len(rows)
        lines.append(second_row(stream, len(rows), firsts[-1], seconds[-1]))
    lines.append(second_row("all", size, summed(firsts), summed(seconds)))
    return "\n".join(lines) + "\n\n" + agreement_table(folder, streams)


def second_row(stream: str, size: int, first: Counts, second: Counts) -> str:
    cells = " | ".join("{:.3f} / {:.3f}".format(*prf(*s["span"])[:2]) for s in (first, second))
    return f"| {stream} | {size} | {cells} |"


def agreement_row(stream: str, size: int, s: Counts) -> str:
    cells = " | ".join(f"{x:.3f}" for key in ("span", "name") for x in prf(*s[key]))
    return f"| {stream} | {size} | {cells} |"


def episodes(rows: list[dict]) -> tuple[float, float, int]:
    """Mean recall of "which episodes touched X" over the labelled entities X that touch an
    episode: from the extracted entities, and from a keyword search of X's canonical name."""
    gold: dict[str, set[str]] = {}
    display: dict[str, str] = {}
    for row in rows:
        for g in row["gold"]:
            key = canonical(g["canonical"])
            display[key] = g["canonical"]
            if row["episode"]:
                gold.setdefault(key, set()).add(row["episode"])
    by_entity: dict[str, set[str]] = {}
    found = extracted(rows)
    for row in rows:
        if row["episode"]:
            for e in found[row["id"]]:
                by_entity.setdefault(e.name, set()).add(row["episode"])
    ent = kw = 0.0
    for key, eps in gold.items():
        ent += len(by_entity.get(key, set()) & eps) / len(eps)
        word = display[key].lower()
        hit = {r["episode"] for r in rows if r["episode"] and word in r["content"].lower()}
        kw += len(hit & eps) / len(eps)
    n = len(gold)
    return (ent / n if n else 1.0), (kw / n if n else 1.0), n


def row_of(
    group: str,
    stream: str,
    size: int,
    s: Counts,
    ent: float | None,
    kw: float | None,
    n: int,
) -> str:
    sp, sr, sf = prf(*s["span"])
    npr, nr, nf = prf(*s["name"])
    up, ur, _ = prf(*s["sure"])
    eps = f"{ent:.3f} | {kw:.3f} | {n}" if ent is not None and kw is not None else " | |"
    return (
        f"| {group} | {stream} | {size} | {sp:.3f} | {sr:.3f} | {sf:.3f} | {npr:.3f} | {nr:.3f} "
        f"| {nf:.3f} | {up:.3f} | {ur:.3f} | {eps} |"
    )


def report(corpus: Path, aside: bool = True, kept_aside_labels: str = "") -> str:
    lines = [
        "| streams | stream | memories | span P | span R | span F1 | name P | name R | name F1 "
        "| sure span P | sure span R | episodes: entities | episodes: keyword | entities X |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    kept = f"kept aside ({kept_aside_labels}/)" if kept_aside_labels else "kept aside"
    groups = [("tuning", TUNING), ("validation", VALIDATION), ("fresh", FRESH)]
    groups += [(kept, ASIDE)] if aside else []
    for group, streams in groups:
        if not streams:
            continue
        parts: list[Counts] = []
        size = 0
        for stream in streams:
            # each stream on its own: ids and known names are its own
            rows = load(corpus, stream, kept_aside_labels)
            parts.append(score(rows))
            size += len(rows)
            lines.append(row_of(group, stream, len(rows), parts[-1], *episodes(rows)))
        lines.append(row_of(group, "all", size, summed(parts), None, None, 0))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("corpus", type=Path, help="the corpus folder (with train/ and validation/)")
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    ap.add_argument(
        "--tuning-only",
        action="store_true",
        help="score the tuning (and fresh) streams alone (while rules change: the kept-aside "
        "errors unread)",
    )
    ap.add_argument(
        "--kept-aside-labels",
        default="",
        metavar="FOLDER",
        help="score the kept-aside streams against another labelling of the same memories, "
        "entity_labels/FOLDER/ (blind: the blind re-label), and print its agreement with the "
        "labels",
    )
    ap.add_argument(
        "--second-labels",
        default="",
        metavar="FOLDER",
        help="for the streams labelled again, blind, in entity_labels/FOLDER/ (blind2): the "
        "extraction against both labellings and their agreement",
    )
    args = ap.parse_args(argv)
    if args.second_labels:
        if not (LABELS / args.second_labels).is_dir():
            ap.error(f"no folder {LABELS / args.second_labels}")
        print(second_labels_report(args.corpus, args.second_labels))
        return 0
    if args.write and args.tuning_only:
        ap.error("--write reports every stream: drop --tuning-only")
    if args.kept_aside_labels and (args.write or args.tuning_only):
        ap.error("--kept-aside-labels scores the kept-aside streams: drop --write / --tuning-only")
    if args.kept_aside_labels and not all(
        label_file(s, args.kept_aside_labels).is_file() for s in ASIDE
    ):
        ap.error(f"no labels of {', '.join(ASIDE)} in {LABELS / args.kept_aside_labels}")
    text = report(args.corpus, aside=not args.tuning_only, kept_aside_labels=args.kept_aside_labels)
    print(text)
    if args.kept_aside_labels:
        print("\n" + agreement_report(args.kept_aside_labels))
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from report import write_section

        labelled = sum(
            1
            for stream in TUNING + VALIDATION + FRESH + ASIDE
            for _ in (LABELS / f"{stream}.jsonl").open()
        )
        write_section(
            "entities",
            "## Entities without an LLM\n\n"
            f"`python benchmarks/entities.py ../shared/corpus --write` on the {labelled} "
            "hand-labelled memories "
            "of `benchmarks/entity_labels/` (the team stream `episodes-dev` is read from "
            "`../shared/datasets/`, the project's own streams from "
            "`benchmarks/training_streams/`; targets: P >= 0.85, "
            "R >= 0.7; episodes from entities >= 0.9 against keyword <= 0.7; episode recall is "
            "over each stream's labelled memories). Sure span P / R: the spans the sure model "
            "(`tribalmemory/entities/confidence.py`, fitted on the tuning streams by "
            "`fit_entity_confidence.py`, its threshold chosen on the validation streams) is "
            "sure of, by which an entity is listed without an LLM; the other spans stay "
            "mentions (the episodes columns count every span).\n\n" + text,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
