"""A name of several words and its short forms (issue 43, "by any alias"): asking for
``Norvane Tagus`` counts the memories and episodes that write ``Tagus`` alone, and asking for
``Harrow Vale Hospital`` those that write ``HVH``; a part that is an English word (``Spring``
of ``Spring 2027``) names nothing alone; another project's short forms are never counted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from test_entity_store import remember
from test_mcp import connect, ok

from tribalmemory.entities.short_forms import (
    code_end,
    code_range,
    coded,
    host_label,
    hump_initial,
    hump_initials,
    initials_of,
    last_word,
    number_forms,
    numbered,
    path_ends,
    proper_name,
    short_forms,
    standard_code,
    stands_alone,
)
from tribalmemory.runtime import Runtime

Make = Callable[..., Awaitable[Runtime]]
A = "alpha"
ALPHA = {"project": A}
DAYS = 8 * 24 * 60
"""Minutes between the ship's memories: days apart."""


async def remember_each(rt: Runtime, say: list[str]) -> list[str]:
    """Each of ``say`` remembered in project alpha, days apart, in order: their ids."""
    return [await remember(rt, text, i * DAYS, A) for i, text in enumerate(say)]


async def memories_of(rt: Runtime, name: str) -> set[str]:
    """The memories ``GET /v1/entities/{name}`` lists in project alpha (up to 50)."""
    found = await rt.api.entity_get(name, project="alpha", limit=50)
    return {m["memory_id"] for m in found["memories"]}


def test_the_parts_and_initials_of_a_name_of_several_words() -> None:
    assert short_forms("Norvane Tagus") == ["norvane", "tagus"]
    assert short_forms("Lakeview MUD 12") == ["lakeview", "lakeview-mud", "mud", "mud-12"]
    # no part begins or ends with a connective; the initials leave connectives out
    assert short_forms("Secretary of State") == ["secretary", "state"]
    assert initials_of("Secretary of State") == ["SS", "SOS"]
    assert initials_of("Harrow Vale Hospital") == ["HVH"]
    # one word, a path, a dotted or an underscored name: no short forms
    phrase = "the nine words of a sentence are no name at all"
    for written in ("Tagus", "pricing models/run.py", "noon_reports me", "api.v2 client", phrase):
        assert short_forms(written) == [] == initials_of(written)


def test_a_part_names_a_thing_alone_unless_it_is_an_english_word() -> None:
    assert stands_alone("tagus", ["Tagus"])  # no English word
    assert not stands_alone("spring", ["Spring"])  # a word
    assert stands_alone("mud", ["MUD"])  # a word, written as an acronym
    assert stands_alone("mud-12", ["MUD 12"]) and stands_alone("base-lodge", ["Base Lodge"])
    assert stands_alone("12", ["12"])  # a number


def test_initials_of_a_run_of_three_words_inside_a_name() -> None:
    # CDA of Guidewire Cloud Data Access; two letters of a part are too common to count
    assert initials_of("Guidewire Cloud Data Access") == ["GCDA", "GCD", "CDA"]
    assert initials_of("Colorado Division of Insurance")[:2] == ["CDI", "CDOI"]
    # DOI of Division of Insurance, not DI
    assert initials_of("Colorado Division of Insurance")[2:] == ["DOI"]


def test_the_other_number_of_a_name() -> None:
    assert number_forms("incoterms") == ["incoterm"]
    assert number_forms("poll-pad") == ["poll-pads"]
    for name in ("access", "pg", "v2.1", "ops.gate_scans", "room-12"):
        assert number_forms(name) == []


def test_the_end_of_a_code_is_letters_and_digits_both() -> None:
    assert code_end("etch-k11") == "k11" and code_end("s063-pos02") == "pos02"
    for name in ("orders-service", "skua-07", "k11", "v2.1", "ops.x-k1", "a/b-c1"):
        assert code_end(name) is None


def test_a_word_of_a_proper_name_stands_alone_when_written_capitalised() -> None:
    assert proper_name("Ingrid Sørensen") and proper_name("Colorado Division of Insurance")
    assert not proper_name("Spring 2027") and not proper_name("Douglas sea scale")
    # Ingrid and Teams are English words (the tokenizer knows them) but name a thing here
    assert not stands_alone("ingrid", ["Ingrid"])
    assert stands_alone("ingrid", ["Ingrid"], "Ingrid Sørensen")
    assert stands_alone("teams", ["Teams"], "Microsoft Teams")
    assert not stands_alone("teams", ["Teams", "teams"], "Microsoft Teams")  # also a word
    assert not stands_alone("microsoft", ["Microsoft"], "Microsoft Teams")  # the maker
    assert not stands_alone("spring", ["Spring"], "Spring 2027")


async def test_asking_for_a_name_counts_what_its_short_forms_name(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    full = await remember(rt, "Norvane Tagus bunkered 600 t of VLSFO at Sines on Monday.", 0, A)
    short = await remember(rt, "Logged that the Tagus lost 4 kn after the hull cleaning.", DAYS, A)
    other = await remember(rt, "Logged that the Douro lost 2 kn after the storm.", 2 * DAYS, A)
    elsewhere = await remember(rt, "Logged that the Tagus lost 3 kn in the canal.", DAYS, "beta")
    first = await rt.api.episode_create("bunkering", [full])
    second = await rt.api.episode_create("speed loss", [short])

    found = await rt.api.entity_get("Norvane Tagus", project="alpha")
    assert found["entity"]["name"] == "norvane-tagus"
    assert found["also_written_as"] == ["tagus"]
    assert [m["memory_id"] for m in found["memories"]] == [short, full]  # newest first
    assert found["memory_count"] == 2 and found["entity"]["mentions"] == 1
    latest = await rt.api.entity_get("Norvane Tagus", project="alpha", limit=1)
    assert [m["memory_id"] for m in latest["memories"]] == [short]
    assert latest["memory_count"] == 2  # the page says "the latest 1 of 2"
    assert [e["episode_id"] for e in found["episodes"]] == [
        second["episode_id"],
        first["episode_id"],
    ]
    assert {c["name"] for c in found["co_occurring"]} >= {"sines", "vlsfo"}
    assert not {"norvane-tagus", "tagus"} & {c["name"] for c in found["co_occurring"]}
    # the short form alone names only itself; a part is not the whole
    alone = await rt.api.entity_get("Tagus", project="alpha")
    assert alone["entity"]["name"] == "tagus" and alone["also_written_as"] == []
    assert [m["memory_id"] for m in alone["memories"]] == [short]
    assert alone["memory_count"] == 1
    # recall's entity filter searches the same memories, in this project only
    hits = await rt.api.recall("ship lost speed", entity="Norvane Tagus", project="alpha")
    assert {h["memory_id"] for h in hits["results"]} == {full, short}
    assert other not in {m["memory_id"] for m in found["memories"]}
    across = await rt.api.recall("ship lost speed", entity="Norvane Tagus", project="beta")
    assert [h["memory_id"] for h in across["results"]] == [elsewhere]  # beta's own Tagus

    async with connect(rt.api) as agent:
        tool = ok(await agent.call_tool("tribal_entity", {"name": "Norvane Tagus"} | ALPHA))
        assert tool["also_written_as"] == ["tagus"]
        assert [m["memory_id"] for m in tool["memories"]] == [short, full]


async def test_initials_count_when_written_in_capitals_and_a_word_never(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    full = await remember(rt, "Harrow Vale Hospital moved its scanner service to Tuesday.", 0, A)
    initials = await remember(rt, "Moved the staff party to HVH on Friday.", 30, A)
    found = await rt.api.entity_get("Harrow Vale Hospital", project="alpha")
    assert found["also_written_as"] == ["hvh"]
    assert [m["memory_id"] for m in found["memories"]] == [initials, full]

    await remember(rt, "Printed the Spring 2027 timetable for Dana.", 60, A)
    await remember(rt, "Dana said Spring maintenance is booked.", 90, A)
    assert (await rt.api.entity_get("Spring", project="alpha"))["entity"]["mentions"] == 2
    # no entity is stored under it, and Spring is not its short form: only the memory that
    # writes it answers, not Spring's other one
    written = await rt.api.entity_get("Spring 2027", project="alpha")
    assert (written["entity"]["kind"], written["also_written_as"]) == ("written", [])
    assert written["memory_count"] == 1


async def test_a_first_name_a_product_a_plural_a_table_and_a_tool_count_for_the_whole(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Ingrid Sørensen approved the airlift budget for Baidoa.",
        "Check the forecast before Ingrid takes it to the cluster.",
        "Dana Whitlock and Dana Whitfield both asked for the ballot report.",
        "Sent the report to Dana before noon.",
        "Training for the masters ran over Microsoft Teams on Monday.",
        "Wave 2 training ran over Teams with the engineers.",
        "The Microsoft licence renewal is due in March.",
        "Unit4 price lists have one Incoterm field per line.",
        "Scans come from `ANALYTICS.ACCESS.GATE_SCANS` in Snowflake.",
        "The noon reports live in PostgreSQL 16 on the fleet server.",
        "Vacuumed the Postgres tables after the upgrade.",
        "ETCH-K11 and S063-POS02 were down for a chamber clean.",
        "The chamber clean of K11 is done; POS02 is still down at both stores, as S094-POS02.",
    ]
    ids = await remember_each(rt, say)
    memories = partial(memories_of, rt)

    assert await memories("Ingrid Sørensen") == {ids[0], ids[1]}
    # Dana is two people's first name here: asking for one of them does not count it
    assert await memories("Dana Whitlock") == {ids[2]}
    # Teams alone is Microsoft Teams; Microsoft alone is the maker
    assert await memories("Microsoft Teams") == {ids[4], ids[5]}
    assert await memories("Incoterms") == {ids[7]}
    assert await memories("GATE_SCANS") == {ids[8]}
    assert await memories("PostgreSQL") == {ids[9], ids[10]} == await memories("Postgres")
    # a code's end written alone counts for it, unless another code ends so (POS02)
    assert await memories("ETCH-K11") == {ids[11], ids[12]}
    assert await memories("S063-POS02") == {ids[11]}
    # another project never counts
    other = await remember(rt, "Ingrid booked the flight.", 20 * DAYS, "beta")
    assert other not in await memories("Ingrid Sørensen")


async def test_initials_a_memory_defines_count_for_the_name_afterwards(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    first = await remember(rt, "Resorts: Kestrel Peak (KP, Colorado) opens Friday 13 Nov.", 0, A)
    later = await remember(rt, "Pricing: the KP floor is $89 for the season.", DAYS, A)
    other = await remember(rt, "Pricing: the floor is $79 for the season.", 2 * DAYS, A)
    found = await rt.api.entity_get("Kestrel Peak", project="alpha")
    assert {m["memory_id"] for m in found["memories"]} == {first, later}
    assert other not in {m["memory_id"] for m in found["memories"]}


def test_the_humps_of_a_name_make_its_short_forms() -> None:
    assert hump_initials("OpenColorIO") == ["OCIO"]
    assert hump_initials("ConnectSmart Kitchen") == ["CSK"]
    assert "APIM" in hump_initials("Azure API Management")
    assert hump_initials("Merritt Regional 911")[0] == "MR911"
    assert "W26" not in hump_initials("Winter 26")  # one letter: a week, a code
    # two characters are too common to count; a path or dotted name has no humps
    for written in ("JasperReports", "Secretary of State", "nf-core/sarek", "Fly.io"):
        assert hump_initials(written) == []


def test_a_path_ends_in_its_shorter_paths() -> None:
    assert path_ends("nf-core/sarek") == ["sarek"]
    assert path_ends("fieldsim/deploy/asj-2b.toml") == ["deploy/asj-2b.toml", "asj-2b.toml"]
    # a folder, a branch, a route or an address ends in no name, nor a file of a word
    for name in (
        "kv/agc/lims-bridge",  # a path of three parts, no file
        "board/rev-c",  # a folder: its owner would be an English word
        "hotfix/login-loop",  # a branch
        "fixtures/app.log",  # app is a word: many folders have one
        "/v2/accounts/sarek",
        "s3://runs/sarek",
        "sarek",
    ):
        assert path_ends(name) == []


def test_a_version_or_a_code_is_written_with_its_number() -> None:
    assert numbered("oauth")[1] == "oauth2" and len(numbered("oauth")) == 9
    assert numbered("k8s") == [] == numbered("api")  # a code, or a word of three letters
    assert numbered("unit") == []  # an English word: unit2 is another unit
    assert number_forms("a100") == ["a100s"] and number_forms("a100s") == ["a100"]
    assert number_forms("coldcard-mk4") == ["coldcard-mk4s"]
    assert number_forms("elastic-ip") == ["elastic-ips"]  # two letters, after another word
    # a number or an abbreviation with dots is a word of a name; a number alone no part
    assert short_forms("Twist Exome 2.0")[:2] == ["twist", "twist-exome"]
    assert "v2.0" not in short_forms("Twist Exome 2.0")
    assert short_forms("Kievit Mobiel B.V.")[0] == "kievit"
    assert short_forms("Fly.io client") == []


async def test_a_versioned_name_a_repository_humps_and_a_version_count_for_the_whole(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Validated the calls in the Twist Exome 2.0 targets.",
        "Recall dropped inside the Twist Exome targets after the liftover.",
        "Applied the plan in plumline/infra-live this morning.",
        "The infra-live plan drifted overnight.",
        "Cloned nf-core/sarek for the exome validation.",
        "Reran `sarek` with the new intervals file.",
        "Edited data/ASJ/signals.yaml and data/KBJ/signals.yaml for the new aspects.",
        "The linter flagged signals.yaml twice.",
        "The colour pipeline reads its OpenColorIO config from the show folder.",
        "Bumped the OCIO config to 2.3 for the new LUTs.",
        "The portal signs users in with OAuth against the district's tenant.",
        "The token refresh over OAuth2 fails after an hour.",
    ]
    ids = await remember_each(rt, say)
    memories = partial(memories_of, rt)

    # no entity is stored under the name itself: what writes it, and its short forms' entities
    assert await memories("Twist Exome 2.0") == {ids[0], ids[1]}
    found = await rt.api.entity_get("Twist Exome 2.0", project="alpha")
    assert found["entity"]["name"] == "twist-exome" and found["memory_count"] == 2
    assert await memories("infra-live") == {ids[2], ids[3]}
    # a repository's name alone, both ways; a file name two paths end in names neither
    assert await memories("nf-core/sarek") == {ids[4], ids[5]} == await memories("sarek")
    assert await memories("data/ASJ/signals.yaml") == {ids[6]}
    assert await memories("OpenColorIO") == {ids[8], ids[9]}
    assert await memories("OAuth") == {ids[10], ids[11]}
    hits = await rt.api.recall("config", entity="OpenColorIO", project="alpha")
    assert {h["memory_id"] for h in hits["results"]} == {ids[8], ids[9]}


async def test_a_first_name_opening_a_sentence_counts_unless_the_project_writes_it_small(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Gary Schroeder signed the milk contract for the co-op.",
        "Gary phoned about the price review.",
        "Applied Materials shipped the chamber kit on Monday.",
        "Applied the recipe patch to the etcher.",
        "The fab applied for the permit last week.",
        "Sent gary.ts to review.",
    ]
    ids = await remember_each(rt, say)
    memories = partial(memories_of, rt)

    assert await memories("Gary Schroeder") == {ids[0], ids[1]}
    hits = await rt.api.recall("price", entity="Gary Schroeder", project="alpha")
    assert {h["memory_id"] for h in hits["results"]} <= {ids[0], ids[1]}
    assert ids[1] in {h["memory_id"] for h in hits["results"]}
    # applied is a word of this project's prose: Applied opening a sentence is the verb
    assert await memories("Applied Materials") == {ids[2]}


async def test_a_name_in_small_letters_counts_where_prose_writes_it_alone(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Cloned `shelfdiff` for the policy training.",
        "Trained the current shelfdiff config on gpu02 as the reference.",
        "Wrote shelfdiff/configs/base.yaml for the paper runs.",
        "The ingress-shelfdiff route was removed.",
    ]
    ids = await remember_each(rt, say)
    # the stored name, and prose writing it alone; not a path or a longer name containing it
    assert await memories_of(rt, "shelfdiff") == {ids[0], ids[1]}


def test_the_code_of_a_standard_or_model_after_its_body_in_capitals() -> None:
    assert standard_code("IEC 61850") == "61850" and standard_code("SEMI E90") == "E90"
    assert standard_code("IBM z16") == "z16" and standard_code("ARINC 615A") == "615A"
    # a short number is a status or a port as often; a release, or a name of another shape
    for written in ("ARINC 429", "HTTP 429", "JACE 8000", "TLS 1.3", "SOC 2", "Gary Schroeder"):
        assert standard_code(written) is None


async def test_a_standards_code_written_alone_counts_for_it(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "The gateway speaks IEC 61850 to the substations.",
        "Mapped the 61850 datasets for the new RTU.",
        "Logged 61850-9-2 sampled values on the bus.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "IEC 61850") == {ids[0], ids[1]}


async def test_a_products_word_counts_beside_the_names_opening_with_it(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Released 5.12 on Google Play with the new signing key.",
        "Halted the Play rollout at 10% because of the crash spike.",
        "The Play Console flagged the build for a policy review.",
        "Moved the reports database to SQL Server and the maps to ArcGIS Server.",
        "Restarted Server after the patch window.",
    ]
    ids = await remember_each(rt, say)
    # Play Console is named after Play: Play alone is still Google Play's
    assert await memories_of(rt, "Google Play") == {ids[0], ids[1]}
    # SQL Server ends with Server too: Server alone is no short form of ArcGIS Server
    assert ids[4] not in await memories_of(rt, "ArcGIS Server")


def test_the_last_word_of_a_name_and_the_initials_of_a_words_humps() -> None:
    assert last_word("Medidata Rave") == "Rave" and last_word("ArcGIS Hub") == "Hub"
    assert last_word("Gary Schroeder") == "Schroeder"
    # three words, a word in capitals or of two letters, a number: no last word alone
    assert last_word("IBM MQ") == "MQ" and last_word("Amazon ECS") == "ECS"
    for written in ("Azure Cosmos DB", "Tom Ng", "Prop B", "Spring 2027", "Secretary of State"):
        assert last_word(written) is None
    assert hump_initial("TypeScript") == "TS" and hump_initial("Golang") == "G"


async def test_a_products_last_word_counts_unless_beside_another_capitalised_word(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Medidata Rave is the EDC for the AMB study.",
        "Rave build started for the oncology study.",
        "The Rave Architect draft has two new forms.",
        "Bounced the stems in Ableton Live for the demo.",
        "Live crashed when loading the plugin.",
        "The store went live on Monday.",
    ]
    ids = await remember_each(rt, say)
    # Rave opening a sentence, where the extraction reads no name; not in Rave Architect,
    # another name that Rave opens
    assert await memories_of(rt, "Medidata Rave") == {ids[0], ids[1]}
    # the project writes live in small letters: Live alone is a word of its prose
    assert await memories_of(rt, "Ableton Live") == {ids[3]}


async def test_a_tools_short_name_in_capitals_counts_for_the_tool(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "Ported the SDK examples to TypeScript.",
        "Semgrep runs on portal-web (TS) and shipment-api (Go) for two weeks.",
        "The player reads MPEG-TS segments from the origin.",
        "Rewrote the poller in Golang.",
        "GO for the release after the review.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "TypeScript") == {ids[0], ids[1]}
    # Go, stored as the tool's name, counts; GO is no initials of golang's humps: not read
    assert await memories_of(rt, "Golang") == {ids[1], ids[3]}


async def test_node_counts_for_node_js(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "Node.js 18 is out of support for order-web.",
        "Moved order-web to Node 22 and rebuilt the image.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "Node.js") == {ids[0], ids[1]}


def test_a_range_of_codes_is_two_codes_of_the_same_letters() -> None:
    assert code_range("k11-k14") and code_range("mtrc1488-mtrc1497")
    for name in ("etch-k11", "s063-pos02", "k12-main-v3", "k11", "k11-j14"):
        assert not code_range(name)
    assert code_end("qc01-qc04") is None  # a code the range spans, no short form of it


async def test_a_codes_end_counts_beside_a_range_and_names_it_opens(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "ETCH-K12 and ETCH-K14 joined the FDC pilot.",
        "No BufferOverflow on K11-K14 since the pin.",
        "Since the pin the etcher K12 still drops 2-3 s about every 20 min.",
        "New DCP `K12_MAIN_v3` on the etcher, 5 Hz for the gas flows.",
        "The PM on K14 chamber B starts Monday.",
    ]
    ids = await remember_each(rt, say)
    # K12_MAIN_v3 is named after K12, and K11-K14 spans K14: neither is another code ending so
    assert ids[2] in await memories_of(rt, "ETCH-K12")
    assert ids[4] in await memories_of(rt, "ETCH-K14")


def test_a_name_with_a_slash_inside_a_word_has_the_parts_with_it() -> None:
    assert short_forms("NetLine/Ops ++") == ["netline", "ops"]
    assert "blue/green" in short_forms("Amazon RDS Blue/Green Deployments")
    assert short_forms("Nordex N149/5.X") == ["n149/5.x"]
    # its first word alone names a thing of its own; a part with no slash is another name's
    assert "z/os" not in short_forms("z/OS Connect Designer")
    assert not {"south-sudan", "nfi"} & set(short_forms("South Sudan Shelter/NFI Cluster"))
    # a path is no name of words
    assert short_forms("nf-core/sarek") == short_forms("/data/x y") == []


async def test_a_word_a_slash_joins_counts_for_the_name(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "Flight plans go from NetLine/Ops ++ to the crew app.",
        "OCC keyed the delays in NetLine by hand.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "NetLine/Ops ++") == {ids[0], ids[1]}


def test_a_hosts_first_label_is_its_short_name() -> None:
    assert host_label("rs2.svix.net") == ["rs2"] and host_label("db-1.corp.io") == ["db-1"]
    # a domain alone names its product as often; no host; a longer name
    for name in ("github.com", "fly.io", "node.js", "api.v2", "a.b.c.com"):
        assert host_label(name) == []


async def test_a_hosts_first_label_counts_for_the_host(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "BGP session to rs2.svix.net is up again.",
        "Cleared the BGP session on `rs2` at 02:10.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "rs2.svix.net") == {ids[0], ids[1]}


def test_a_name_with_a_digit_or_an_acronym_is_coded() -> None:
    for written in ("A100", "Elastic IP", "Intel NUC", "NAE55"):
        assert coded(written)
    for written in ("Claim", "FLOW", "Node.js", "Medidata Rave"):
        assert not coded(written)


async def test_a_coded_names_plural_counts_for_it_an_english_words_never(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Benchmarked the solver on an A100 last week.",
        "Devito on the A100s: the kernel runs three times faster.",
        "Claim 4411 was reopened by the adjuster.",
        "Claims over 10k go to the senior team.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "A100") == {ids[0], ids[1]}
    assert ids[3] not in await memories_of(rt, "Claim")


async def test_a_products_acronym_after_its_makers_name_counts_alone(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Returns go to the tax system through IBM MQ.",
        "A relay feeds MQ at a governed rate.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "IBM MQ") == {ids[0], ids[1]}


async def test_a_release_counts_where_written_and_its_tag_alone(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "Tagged v2.4.0-rc3 for the flight tests.",
        "OFP 2.4.0-rc3 loaded on IB-1 today with the test pilot.",
        "rc3 changed the schedule around the IOM window.",
        "Shipped v2.6 to the beta group.",
        "The ratio went from 1.8 to 2.6 overnight.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "v2.4.0-rc3") == {ids[0], ids[1], ids[2]}
    # a number of two parts without its v is a measure as often
    assert await memories_of(rt, "v2.6") == {ids[3]}


async def test_a_products_inner_word_counts_beside_a_resource_named_after_it(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Claims events land in Azure Cosmos DB for the ageing report.",
        "During the replay the writes were throttled by Cosmos at 429.",
        "Scaled the cosmos-claims-prod account to 40k RU/s.",
    ]
    ids = await remember_each(rt, say)
    # cosmos-claims-prod is named after Cosmos: Cosmos alone is still Azure Cosmos DB's
    assert ids[1] in await memories_of(rt, "Azure Cosmos DB")


async def test_a_snapshot_counts_with_its_v_and_without(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    say = [
        "Cut v4.0-SNAPSHOT for the matching engine.",
        "Deployed 4.0-SNAPSHOT to the UAT cluster.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "v4.0-SNAPSHOT") == {ids[0], ids[1]}


async def test_a_companys_first_word_counts_beside_its_products_names(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "Epic Games approved the store page for the season.",
        "Epic Online Services lobbies are back after the outage.",
        "Told Epic about the age rating again.",
    ]
    ids = await remember_each(rt, say)
    # Epic Online Services opens with the company's name; Epic beside Online is that product
    assert await memories_of(rt, "Epic Games") == {ids[0], ids[2]}


async def test_a_systems_commands_and_a_names_numbered_version_count_for_it(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    say = [
        "The climate runs are queued on Slurm.",
        "Held the pending tasks with `scontrol hold 8812455`.",
        "The portal signs in with OAuth for staff.",
        "Spike against the Sentrafy v3 sandbox: OAuth2 client credentials from the auth host.",
    ]
    ids = await remember_each(rt, say)
    assert await memories_of(rt, "Slurm") == {ids[0], ids[1]}
    assert await memories_of(rt, "OAuth") == {ids[2], ids[3]}
