"""Entity extraction and alias rules, as pure functions on small hand-written fixtures."""

from __future__ import annotations

import pytest

from tribalmemory.entities import canonical, extract_entities


def found(text: str, known: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    return {e.text: e.kind for e in extract_entities(text, frozenset(known))}


@pytest.mark.parametrize(
    "alias", ["orders-svc", "orders service", "Orders Service", "orders_service"]
)
def test_aliases_of_one_service_meet(alias: str) -> None:
    assert canonical(alias) == "orders-service"


def test_distinct_things_stay_apart() -> None:
    assert canonical("orders") != canonical("orders-service")
    assert canonical("orders-api") != canonical("orders-service")


def test_versions_paths_and_calls_have_one_spelling() -> None:
    assert canonical("0.9.2") == canonical("v0.9.2") == "v0.9.2"
    assert canonical("docs/") == "docs"
    assert canonical("//Depot/Builds/...") == "//depot/builds"
    assert canonical("flush()") == canonical("@flush") == "flush"


def test_tickets_versions_paths_and_code_names_are_found() -> None:
    text = (
        "Merged PR #4521 for BILL-77: billing-api v1.8.2 moves src/billing/tax.py and "
        "calls round_half_up() from TaxTable::apply under /v2/invoices with --dry-run."
    )
    got = found(text)
    assert got["#4521"] == "ticket"
    assert got["BILL-77"] == "ticket"
    assert got["billing-api"] == "system"
    assert got["v1.8.2"] == "version"
    assert got["src/billing/tax.py"] == "path"
    assert got["round_half_up"] == "identifier"
    assert got["TaxTable::apply"] == "identifier"
    assert got["/v2/invoices"] == "path"
    assert got["--dry-run"] == "identifier"


def test_mentions_carry_their_span() -> None:
    text = "We asked Ingrid Salo about #9001."
    spans = {e.text: (e.start, e.end) for e in extract_entities(text)}
    start, end = spans["Ingrid Salo"]
    assert text[start:end] == "Ingrid Salo"
    assert text[slice(*spans["#9001"])] == "#9001"


def test_capitalised_names_inside_a_sentence_are_found_but_not_stop_words() -> None:
    got = found("Yesterday we asked Bruno and the Kestrel team on Monday in March.")
    assert "Bruno" in got and "Kestrel" in got
    assert not {"Yesterday", "Monday", "March"} & set(got)


def test_units_acronyms_and_word_pairs_are_not_entities() -> None:
    got = found("The dump is 12 GB and the PAN check moved 2024/03/01; sign-out and gain/loss too.")
    assert not {"GB", "PAN", "2024/03/01", "sign-out", "gain/loss"} & set(got)


def test_a_known_name_is_found_at_a_sentence_start_and_in_lower_case() -> None:
    text = "Quill runs the migration. We run quill nightly."
    assert "Quill" not in found(text)
    names = [e.text for e in extract_entities(text, known={"quill"})]
    assert names == ["Quill", "quill"]


def test_a_known_capitalised_name_is_found_only_as_written() -> None:
    text = "Wren signed off. The wren in the logo is not her."
    assert [e.text for e in extract_entities(text, known={"Wren"})] == ["Wren"]


def test_an_acronym_stands_alone_in_a_run_of_capitalised_words() -> None:
    got = found("The crash is on Hollowmere PS5 builds, not on the Linux VM.")
    assert {"Hollowmere", "PS5", "Linux"} <= set(got)
    assert not {"Hollowmere PS5", "Linux VM", "VM"} & set(got)


def test_a_sentence_opening_verb_or_function_word_is_not_part_of_a_name() -> None:
    got = found("Shipped Quillmark to staging. Another Android crash came in.")
    assert {"Quillmark", "Android"} <= set(got)
    assert not {"Shipped Quillmark", "Shipped", "Another Android", "Another"} & set(got)


def test_a_possessive_or_a_letter_english_lacks_makes_a_sentence_opener_a_name() -> None:
    assert "Lena" in found("Lena's preference: one ViewModel per screen.")
    assert "Tomás" in found("Tomás is in Buenos Aires.")
    assert "Pulled" not in found("Pulled the logs.")


def test_a_verb_said_of_people_makes_a_sentence_opener_a_name() -> None:
    text = "Marit prefers small PRs. Okko approved #42. Wen off Friday. Ilse primary this week."
    assert {"Marit", "Okko", "Wen", "Ilse"} <= set(found(text))
    assert "Rutger" not in found("Rutger has the keys.")  # nothing said of a person: unknown
    pair = extract_entities("Ilse and Rutger cover EU hours.", known=frozenset({"rutger"}))
    assert "Ilse" in {e.text for e in pair}
    # a role or a group is said of people too, but names no one
    got = found("User prefers tabs. Legal wants the fields hidden. Security asked for it.")
    assert not {"User", "Legal", "Security"} & set(got)


def test_quotes_and_line_breaks_open_a_sentence() -> None:
    got = found("A 'See web pricing' link and a group called 'Beta Club'.\nRollback planned")
    assert not {"See", "Beta Club", "Rollback"} & set(got)
    assert "Beta Club" in found("The Beta Club group grew.")  # unquoted, it is a name


def test_paths_keep_a_trailing_slash_and_a_depot_ellipsis() -> None:
    got = found("Moved app/middleware/ and synced //Depot/Builds/... to tripwise.app/.well-known/.")
    assert got["app/middleware/"] == "path"
    assert got["//Depot/Builds/..."] == "path"
    assert got["tripwise.app/.well-known/"] == "path"


def test_amounts_and_address_ranges_are_not_paths() -> None:
    got = found("Overbilled $3.1k/month at $125/connection/month from two /24 ranges.")
    assert not {"3.1k/month", "125/connection/month", "/24"} & set(got)


def test_globs_folders_branches_and_more_file_kinds_are_paths() -> None:
    text = (
        "Copy *.xvc files from Engine/Renderer, cut release/5.12, regenerate TideTokens.swift "
        "and drop .csproj.user."
    )
    got = {e.text: e.kind for e in extract_entities(text, {"engine/core/math.h"})}
    assert {g: got.get(g) for g in ("*.xvc", "Engine/Renderer", "release/5.12")} == {
        "*.xvc": "path",
        "Engine/Renderer": "path",
        "release/5.12": "path",
    }
    assert got["TideTokens.swift"] == "path" and got[".csproj.user"] == "path"
    assert not {"Engine", "Renderer", ".csproj", "TideTokens"} & set(got)


def test_dotted_code_names_are_whole() -> None:
    got = found("BookingFlowTest.selectsSecondSlot fails; it writes json.dumps() of the body.")
    assert got["BookingFlowTest.selectsSecondSlot"] == "identifier"
    assert got["json.dumps"] == "identifier"
    assert not {"BookingFlowTest", "selectsSecondSlot", "dumps"} & set(got)


def test_version_ranges_hashes_channels_and_headers() -> None:
    got = found(
        "Diff v2.87..v2.88 at 8f31c0e, alert in #billing; the Idempotency-Key header, UTC-3."
    )
    assert got["v2.87"] == got["v2.88"] == "version"
    assert got["8f31c0e"] == "identifier"
    assert got["#billing"] == "identifier"
    assert got["Idempotency-Key"] == "identifier"
    assert "UTC-3" not in got and "Key" not in got
    assert found("Filed HM-4471.")["HM-4471"] == "ticket"


def test_code_in_backticks_names_a_code_name_or_the_program_of_a_command() -> None:
    got = found(
        "Run `adb shell pm get-app-links`, set `priority`, then `await request.json()`; "
        "it failed with `dial tcp 10.0.0.1:80: connect: refused`."
    )
    assert {"adb", "priority"} <= set(got)
    assert not {"await", "dial", "shell"} & set(got)


def test_a_bare_file_name_names_the_one_known_path_ending_in_it() -> None:
    text = "Split Math.h and Types.h."
    names = {e.text: e.name for e in extract_entities(text, known={"engine/core/math.h"})}
    assert names == {"Math.h": "engine/core/math.h", "Types.h": "types.h"}
    two = {"engine/core/math.h", "tools/math.h"}  # ambiguous: the bare name stays itself
    assert {e.name for e in extract_entities(text, known=two)} == {"math.h", "types.h"}


def test_a_name_written_short_is_the_one_known_name_it_opens() -> None:
    """``Greg`` once ``Greg Mallory`` is known is Greg Mallory (by his short name); not when two
    known names start with it, nor a maker or a listed tool before its product's name."""
    text = "Greg signed off. We asked Greg and Riverkeep about Google and Kafka."

    def names(known: set[str]) -> dict[str, str]:
        return {e.text: e.name for e in extract_entities(text, known=known)}

    full = {"Greg Mallory", "Riverkeep Trust", "Google Play", "Kafka Connect"}
    assert names(full) == {
        "Greg": "greg-mallory",
        "Riverkeep": "riverkeep-trust",
        "Google": "google",
        "Kafka": "kafka",
    }
    assert names(full | {"Greg Tanaka"})["Greg"] == "greg"  # two Gregs: which is not known
    assert names({"Greg Mallory-Smith", "Riverkeep Trust 2"}) == {  # no run of plain words
        "Greg": "greg",
        "Riverkeep": "riverkeep",
        "Google": "google",
        "Kafka": "kafka",
    }
    assert names(set())["Greg"] == "greg"


def test_a_first_name_joins_a_full_name_written_in_any_alphabet() -> None:
    text = "Check the forecast before Ingrid takes it to the cluster, and ask Mette."
    found = {e.text: e.name for e in extract_entities(text, {"Ingrid Sørensen", "Mette Kjær"})}
    assert found == {"Ingrid": "ingrid-sørensen", "Mette": "mette-kjær"}


def test_initials_defined_in_brackets_name_a_thing_and_then_the_full_name() -> None:
    text = "Three resorts: Kestrel Peak (KP, Colorado) and Bristlecone Basin (BB; Utah)."
    found = [(e.text, e.name) for e in extract_entities(text)]
    assert ("KP", "kp") in found and ("BB", "bb") in found  # not yet known: their own names
    # no definition: the capitals are not the initials of the words before them
    assert "WA" not in {e.text for e in extract_entities("Ellisford IT Department (WA; 214k)")}
    assert "KP" not in {e.text for e in extract_entities("KP floor is $89.")}
    # once the project knows both, KP alone is Kestrel Peak; not when two names share them
    known = {"Kestrel Peak", "KP", "Bristlecone Basin"}
    later = "KP floor is $89, BB is $79."
    assert {e.text: e.name for e in extract_entities(later, known)} == {"KP": "kestrel-peak"}
    both = known | {"Kings Pass"}
    assert {e.text: e.name for e in extract_entities(later, both)} == {"KP": "kp"}


def test_a_known_name_is_found_as_whole_words_with_its_own_separators() -> None:
    text = "Marek Novak approved. Marek  Novak wrote it. We run quill-2, quill.js and then quill."
    found = extract_entities(text, known={"Marek Novak", "quill"})
    assert [e.text for e in found if e.text == "Marek Novak"] == ["Marek Novak"]
    assert [(e.text, e.start) for e in found if e.text == "quill"] == [("quill", len(text) - 6)]


def test_a_known_service_is_found_spelled_out_in_lower_case_prose() -> None:
    text = "The orders service timed out; restarted the orders svc, then pw api recovered."
    got = {e.text: (e.kind, e.name) for e in extract_entities(text, {"orders-service", "pw-api"})}
    assert got == {
        "orders service": ("system", "orders-service"),
        "orders svc": ("system", "orders-service"),
        "pw api": ("system", "pw-api"),
    }
    assert found(text) == {}  # unknown: two words of prose


def test_only_a_known_name_of_letters_ending_in_a_kind_of_software_is_spelled_out() -> None:
    known = {"line-2", "store-server", "orders-service"}
    got = found("Paused line 2 on the store server. We take orders. Service was slow.", known)
    assert got == {}  # a number, words prose puts side by side, a sentence between


def test_a_closing_tag_is_no_path() -> None:
    got = found("Escaped <script>alert(1)</script> in the page; see /v1/spend and </div>.")
    assert got == {"/v1/spend": "path"}


def test_an_acronym_s_plural_is_a_kind_of_thing_and_stands_alone() -> None:
    got = found("We reviewed two PRs for the SKUs; Xbox PDBs and the P1s wait.")
    assert "Xbox" in got
    assert not {"PRs", "SKUs", "Xbox PDBs", "PDBs", "P1s"} & set(got)


def test_a_sentence_opening_gerund_or_short_past_tense_is_not_part_of_a_name() -> None:
    got = found("Asked Daan for the video. Evaluating Vanta next week.")
    assert {"Daan", "Vanta"} <= set(got)
    assert not {"Asked Daan", "Asked", "Evaluating Vanta", "Evaluating"} & set(got)


def test_an_acronym_after_a_sentence_opener_does_not_make_the_opener_a_name() -> None:
    got = found("Quarterly ASV scan passed. Nightly PS5 Release is green.")
    assert not {"Quarterly", "Nightly"} & set(got)
    assert "PS5" in got


def test_an_opener_before_a_known_name_is_not_part_of_it() -> None:
    text = "Plan agreed. Needs Rutger to approve."
    assert [e.text for e in extract_entities(text)] == ["Needs Rutger"]  # nothing known yet
    assert [e.text for e in extract_entities(text, known={"Rutger"})] == ["Rutger"]
    # a name known whole keeps its first word
    assert [e.text for e in extract_entities("Google Play rejected it.", {"Google", "Play"})] == [
        "Google Play"
    ]


def test_literals_and_language_adjectives_are_not_names() -> None:
    got = found("The shader returns NaN or Inf when True; the Polish strings and English copy.")
    assert not {"NaN", "Inf", "True", "Polish", "English"} & set(got)
    assert "Lokalise" in found("We send Polish strings to Lokalise.")


def test_a_number_after_a_section_word_is_no_release() -> None:
    got = found("Req 10.5.1 and guideline 3.1.1 hold since 2.4.0; see section 4.2.1 too.")
    assert got.get("2.4.0") == "version"
    assert not {"10.5.1", "3.1.1", "4.2.1"} & set(got)


def test_the_steps_of_a_menu_path_are_screen_labels() -> None:
    got = found("Open the Play Console > App integrity page and then Settings > Apple ID there.")
    assert "Play Console" in got
    assert not {"App", "Apple ID", "Apple"} & set(got)
    assert {"Firehose", "Lambda"} <= set(found("Logs go to S3 -> Firehose -> Lambda."))


def test_windows_paths_are_paths() -> None:
    got = found(
        r"It writes C:\Program Files\Forkbase\fb.exe and reads Engine\Core\Math.h "
        r"and src\app\ but not and\or."
    )
    assert got.get(r"C:\Program Files\Forkbase\fb.exe") == "path"
    assert got.get(r"Engine\Core\Math.h") == "path"
    assert got.get("src\\app\\") == "path"
    assert not {r"and\or", "Program Files"} & set(got)
    assert canonical("src\\app\\") == canonical("src\\app") == "src\\app"


def test_a_code_name_in_angle_brackets_is_a_placeholder() -> None:
    got = found("Resent them with `stripe events resend <evt_id> --webhook-endpoint <we_id>`.")
    assert not {"evt_id", "we_id"} & set(got)
    assert got.get("--webhook-endpoint") == "identifier"
    assert found("The handler reads evt_id first.").get("evt_id") == "identifier"
    assert found("It includes <windows.h> first.").get("windows.h") == "path"


def test_a_two_part_number_is_a_release_once_its_three_part_release_is_known() -> None:
    text = "Open PRs tagged 5.12: 7; crash-free 98.1% (5.11: 99.6%) and Go 1.24."
    assert not {"5.12", "5.11", "98.1", "1.24"} & set(found(text))
    got = {e.text: (e.kind, e.name) for e in extract_entities(text, {"v5.12.0", "v5.11.3"})}
    assert got["5.12"] == ("version", "v5.12") and got["5.11"] == ("version", "v5.11")
    assert not {"98.1", "1.24"} & set(got)
    assert "5.12" not in {e.text for e in extract_entities("See Req 5.12 first.", {"v5.12.0"})}


def test_a_scoped_name_keeps_the_member_after_it() -> None:
    got = found("Moved Mime::Type.register up; ActiveRecord::Base.encrypts needs keys.")
    assert got.get("Mime::Type.register") == got.get("ActiveRecord::Base.encrypts") == "identifier"
    assert not {"Mime::Type", "ActiveRecord::Base"} & set(got)


def test_a_code_name_in_a_namespace_keeps_its_namespace() -> None:
    got = found('Set android:exportedService="true" and grant logs:FilterLogEvents to it.')
    assert got.get("android:exportedService") == got.get("logs:FilterLogEvents") == "identifier"
    assert not {"exportedService", "FilterLogEvents"} & set(got)


def test_links_end_before_punctuation_and_hosts_keep_a_path_or_a_port() -> None:
    got = found(
        "Open https://status.quillhq.health/api/ping, then bump golang.org/x/crypto and "
        "point it at cache.internal:6380; the bug is in app.py:42."
    )
    assert got.get("https://status.quillhq.health/api/ping") == "url"
    assert got.get("golang.org/x/crypto") == "url"
    assert got.get("cache.internal:6380") == "url"
    assert got.get("app.py") == "path" and "app.py:42" not in got


def test_a_dependency_s_version_is_no_release_of_the_team() -> None:
    got = found(
        "Pinned rails ~> 7.1.5, numpy>=1.26.4, react@18.2.0 and hl7.fhir.us.core#6.1.0; "
        "bumped x/crypto v0.31.0. Shipped 3.2.1, then v2.87 -> v2.88."
    )
    assert not {"7.1.5", "1.26.4", "18.2.0", "6.1.0", "v0.31.0"} & set(got)
    assert "react@18.2.0" not in got  # a package, not a mail address
    assert got.get("3.2.1") == got.get("v2.87") == got.get("v2.88") == "version"


def test_a_word_with_humps_in_a_run_of_capitalised_words_is_part_of_a_name() -> None:
    got = found(
        "Builds run on GitHub Actions; queries use CloudWatch Insights. Drop QuillLoader too."
    )
    assert {"GitHub Actions", "CloudWatch Insights", "QuillLoader"} <= set(got)
    assert not {"GitHub", "Actions", "CloudWatch", "Drop QuillLoader", "Drop"} & set(got)
    two = found("Chose WorkOS AuthKit for login.")  # two such words stay two
    assert two.get("WorkOS") == two.get("AuthKit") == "identifier"


def test_capitalised_folders_start_with_a_known_folder_and_pairs_are_no_paths() -> None:
    text = "Port Engine/Audio to Kotlin/Spring over HTTP/1.1, not on Tue/Thu."
    got = found(text)
    assert not {"Engine/Audio", "Kotlin/Spring", "HTTP/1.1", "Tue/Thu"} & set(got)
    assert {"Kotlin", "Spring"} <= set(got)
    known = {e.text: e.kind for e in extract_entities(text, {"engine/core/math.h"})}
    assert known.get("Engine/Audio") == "path"


def test_a_time_zone_is_one_code_name() -> None:
    got = found("Slots render in Europe/Lisbon and America/Argentina/Buenos_Aires time.")
    assert got.get("Europe/Lisbon") == got.get("America/Argentina/Buenos_Aires") == "identifier"
    assert not {"Europe", "Lisbon", "Buenos_Aires"} & set(got)


def test_a_key_with_more_number_groups_is_one() -> None:
    got = found("Sent invoices QH-2025-09 and OPS-1142 today.")
    assert got.get("QH-2025-09") == got.get("OPS-1142") == "ticket"
    assert "QH-2025" not in got


def test_a_range_of_days_and_plural_days_are_no_names() -> None:
    got = found("Ilka tests Monday-Tuesday and deploys on Fridays, with the Content-Type header.")
    assert not {"Monday-Tuesday", "Fridays"} & set(got)
    assert got.get("Content-Type") == "identifier"


def test_a_word_in_small_letters_opening_a_sentence_is_a_name_written_its_own_way() -> None:
    text = "Deployed. quill-relay is down again. quillc failed too... then it recovered; e.g. logs."
    got = found(text)
    assert got.get("quill-relay") == "name"  # code-shaped: known, then found anywhere
    assert got.get("quillc") == "identifier"  # a plain word: found there only
    assert not {"then", "logs", "it"} & set(got)
    later = extract_entities("Restarted quill-relay.", {e.text for e in extract_entities(text)})
    assert [e.text for e in later] == ["quill-relay"]
    assert "fixed" not in found("fixed the build.")  # a stop word stays a word


def test_a_hyphenated_word_kin_to_a_known_name_or_system_is_a_system() -> None:
    text = "Moved ova-dash and ova-fhir to the okta-admins group; the tools-only and go-live bits."
    assert not {"ova-dash", "ova-fhir", "okta-admins"} & set(found(text))
    got = {e.text: e.kind for e in extract_entities(text, {"ova-api", "Okta", "Tools", "Go"})}
    assert got.get("ova-dash") == got.get("ova-fhir") == got.get("okta-admins") == "system"
    assert not {"tools-only", "go-live"} & set(got)  # compound words, not kin


def test_a_pr_with_its_repository_and_a_scoped_package_are_one() -> None:
    got = {
        e.text: (e.kind, e.name)
        for e in extract_entities("Merged quill-web#845; uses @acme/ui-kit.")
    }
    assert got.get("quill-web#845") == ("ticket", "#845")
    assert got.get("@acme/ui-kit", ("", ""))[0] == "identifier"
    assert not {"quill-web", "acme/ui-kit"} & set(got)


def test_a_plain_word_opening_a_sentence_needs_a_writer_who_capitalises() -> None:
    assert found("lunch is at noon on most days.") == {}
    assert found("Deploy done. lunchbox failed again.").get("lunchbox") == "identifier"


def test_units_builtins_honorifics_and_more_nationalities_are_no_entities() -> None:
    got = found(
        "Readings in mS and pH stay; run `set -e` and `echo $PATH` first. Dr. Ames signed "
        "the Portuguese and Japanese copies for Kestrel."
    )
    assert not {"mS", "pH", "set", "echo", "Dr", "Portuguese", "Japanese"} & set(got)
    assert {"Ames", "Kestrel"} <= set(got)
    assert "kubectl" in found("Run `kubectl get pods` now.")


def test_a_place_named_for_a_saint_is_one_name() -> None:
    got = found("Talked to St. Ormond's interface team and the Mt. Hood office.")
    assert {"St. Ormond's", "Mt. Hood"} <= set(got)
    assert not {"St", "Ormond", "Mt", "Hood"} & set(got)


def test_home_paths_branches_and_route_segments_are_paths_and_templates_are_not() -> None:
    got = found(
        "Keep ~/.config/fb/config.toml, cut chore/next-16 from app/[slug]/page.tsx; "
        "repos live in ~/clients/<name>/ on feat/QX-<ticket>-desc."
    )
    assert got.get("~/.config/fb/config.toml") == got.get("chore/next-16") == "path"
    assert got.get("app/[slug]/page.tsx") == "path"
    assert not {"/clients", "~/clients/", "feat/QX", "next-16", "/page.tsx"} & set(got)


def test_calls_and_words_joined_by_slashes_are_no_routes() -> None:
    got = found("Mostly cookies()/headers()/params now, and one/few/many/other plurals.")
    assert not {"/headers", "/params", "one/few/many/other"} & set(got)
    assert got.get("headers") == "identifier"


def test_a_rule_id_keeps_its_hyphens_and_a_glob() -> None:
    got = found("Rule acme.go.sql-string-concat fired; imports com.acme.util.* too.")
    assert got.get("acme.go.sql-string-concat") == got.get("com.acme.util.*") == "identifier"
    assert not {"acme.go.sql", "com.acme.util"} & set(got)


def test_a_module_s_version_after_to_is_no_release() -> None:
    assert "v0.38.0" not in found("Bumped x/crypto to v0.38.0 in edge-gw.")
    assert "v0.38.0" in found("Bumped edge-gw to v0.38.0.")


def test_a_command_s_program_is_known_then_found_in_prose_unless_an_english_word() -> None:
    first = "Install with `qbrew install quill`, check with `make lint`."
    got = {e.text: e.kind for e in extract_entities(first)}
    assert got.get("qbrew") == "name" and got.get("make") == "identifier"
    known = {e.text for e in extract_entities(first) if e.kind == "name"}
    later = [
        e.text for e in extract_entities("Docs now say qbrew first; make sure it runs.", known)
    ]
    assert later == ["qbrew"]


def test_a_statement_or_a_sql_clause_in_backticks_opens_no_command() -> None:
    got = found("It runs `client = QuillClient()` and `where id > 3`, then `qctl sync`.")
    assert not {"client", "where"} & set(got)
    assert got.get("qctl") == "name"


def test_percentiles_units_and_a_known_name_s_plural_are_no_names() -> None:
    text = "Deploy done. p99 went to 5 s at 868 MHz. We keep two Gizmos per Gizmo rack."
    got = {e.text for e in extract_entities(text, {"Gizmo", "Gizmos"})}
    assert not {"p99", "MHz", "Gizmos"} & got
    assert "Gizmo" in got


def test_a_short_number_is_a_ticket_after_a_ticket_word_or_beside_a_ticket() -> None:
    got = found("Merged PR #12 and closes #7; bumps (#455, #77, #318); Front page #6 today.")
    assert {got.get(t) for t in ("#12", "#7", "#455", "#77", "#318")} == {"ticket"}
    assert "#6" not in got


def test_an_owner_s_repository_is_a_path_and_a_compound_no_system() -> None:
    got = found("Pushed to quillhq/quill-cli; the per-site cache and r52-based runs stay.")
    assert got.get("quillhq/quill-cli") == "path"
    assert not {"quill-cli", "per-site", "r52-based"} & set(got)


def test_an_irregular_past_or_a_short_gerund_opening_a_sentence_is_no_part_of_a_name() -> None:
    got = found("Deploy done. Told Bram right away. Using Vite now.")
    assert {"Bram", "Vite"} <= set(got)
    assert not {"Told Bram", "Using Vite", "Told", "Using"} & set(got)


def test_a_list_s_number_opens_no_sentence() -> None:
    got = found("Steps: 1. Rename the table, 2. auth callback, 3. presence to members.")
    assert not {"auth", "presence"} & set(got)
    assert found("Calls went x9. qcache API p95 1.8 s.").get("qcache") == "identifier"


def test_a_release_after_a_products_name_is_that_products() -> None:
    got = found("The scheduler runs Airflow 2.9.1 now; payments-api 2.4.0 went out after it.")
    assert "2.9.1" not in got  # Airflow's release, not the team's
    assert got["2.4.0"] == "version"  # after a system of the team's: its release


def test_a_release_after_a_name_stays_one_once_the_team_writes_it_alone() -> None:
    text = "Crash-free users on Android 5.12.0 at 98%."
    assert "5.12.0" not in found(text)
    got = {e.text: e.kind for e in extract_entities(text, {"v5.12.0"})}
    assert got["5.12.0"] == "version"


def test_a_release_inside_a_longer_token_is_no_release() -> None:
    got = found("Chart tenant-operator-0.9.0 is out; nodes go to v1.18.x after that.")
    assert got["tenant-operator-0.9.0"] == "identifier"
    assert "v1.18" not in got and "0.9.0" not in got


def test_links_of_any_scheme_and_images_with_their_tag_are_whole() -> None:
    text = (
        "Manifest in gs://acme-artifacts/prod/manifest.json, chart at oci://ghcr.io/acme/charts, "
        "runner image ghcr.io/acme/dbt-runner:1.8.2-2."
    )
    got = found(text)
    assert got["gs://acme-artifacts/prod/manifest.json"] == "url"
    assert got["oci://ghcr.io/acme/charts"] == "url"
    assert got["ghcr.io/acme/dbt-runner:1.8.2-2"] == "url"


def test_a_host_that_starts_a_longer_name_is_not_cut() -> None:
    got = found("Lookups for api.stripe.com.payments.svc.cluster.local fail first.")
    assert "api.stripe.com" not in got
    assert "api.stripe.com.payments.svc.cluster.local" in got


def test_quarters_priorities_and_reason_phrases_name_nothing() -> None:
    got = found("Signed images by end of Q1, filed as a P1. Sends return 429 Too Many Requests.")
    assert not {"Q1", "P1", "Requests", "Too Many Requests"} & set(got)
    assert found("The PS5 build passes.")["PS5"] == "name"  # a letter and a digit still name one


def test_the_place_of_a_time_zone_is_no_name() -> None:
    got = found(
        "Standup 09:45 London daily. Rosa is in Buenos Aires (UTC-3), on Dublin local time."
    )
    assert not {"London", "Buenos Aires", "Dublin"} & set(got)
    assert found("We met Rosa in Lisbon.")["Lisbon"] == "name"  # the rule needs the time context


def test_a_compound_over_a_small_word_is_english() -> None:
    assert "Site" not in found("Our side: the Site-to-Site tunnel to Northfield is up.")


def test_a_rates_unit_is_no_path_and_a_glob_of_a_table_is_whole() -> None:
    got = found("HR is in beats /min and any query selecting dim_customers.* fails.")
    assert "/min" not in got
    assert got["dim_customers.*"] == "identifier"
    assert found("Requests to /health time out.")["/health"] == "path"


def test_only_a_whole_known_release_is_the_teams_after_a_products_name() -> None:
    known = {"v0.9.0"}  # the team's tenant-operator v0.9.0: 0.9 starts a known release
    got = {e.text for e in extract_entities("Installed ESO 0.9.13 with Helm.", known)}
    assert "0.9.13" not in got


def test_both_ends_of_a_dependencys_range_are_its_releases() -> None:
    got = found("go list: x/net between v0.21.0 and v0.33.0 everywhere.")
    assert "v0.21.0" not in got and "v0.33.0" not in got


def test_a_private_name_and_a_log_level_are_identifiers() -> None:
    got = found("Rows differ only in _fivetran_synced; pw-api logs at INFO, staging has DEBUG on.")
    assert got["_fivetran_synced"] == "identifier"
    assert got["INFO"] == "identifier" and got["DEBUG"] == "identifier"


def test_a_hyphenated_name_of_three_words_is_one_not_an_english_compound() -> None:
    got = found("Set hook-delete-policy and restart ebs-csi-controller; data is up-to-date.")
    assert got["hook-delete-policy"] == "system"
    assert got["ebs-csi-controller"] == "system"
    assert "up-to-date" not in got


def test_a_humped_word_opening_a_sentence_is_no_ordinary_opener() -> None:
    got = found("NodeLocal DNSCache on all clusters.")
    assert got == {"NodeLocal DNSCache": "name"}


def test_a_route_with_a_parameter_in_braces_is_one_path() -> None:
    got = found("GET /cards/{id}/pan and POST /v1/users/{user_id}/keys/{key.id}.")
    assert got["/cards/{id}/pan"] == "path"
    assert got["/v1/users/{user_id}/keys/{key.id}"] == "path"
    assert "/cards" not in got and "/pan" not in got


def test_an_acronym_opens_no_english_compound() -> None:
    got = found("Requests go app -> api-gateway -> ui-server; sso-only and per-user stay English.")
    assert got["api-gateway"] == "system" and got["ui-server"] == "system"
    assert "sso-only" not in got and "per-user" not in got


def test_a_name_of_a_deployment_in_an_environment_is_a_system() -> None:
    got = found("Projects norrland-prod and norrland-staging; Loki data source is loki-prod.")
    assert got["norrland-prod"] == "system" and got["norrland-staging"] == "system"
    assert got["loki-prod"] == "system"
    assert "non-prod" not in found("Only non-prod and pre-prod get it.")


def test_an_acronym_inside_a_sentence_opens_the_name_after_it() -> None:
    got = found("We moved to AWS Secrets Manager and parse the UK Sanctions List now.")
    assert got["AWS Secrets Manager"] == "name" and got["UK Sanctions List"] == "name"
    known = {e.text for e in extract_entities("Moved to RDS Postgres.", known={"postgres"})}
    assert "RDS Postgres" not in known and "Postgres" in known
    assert "PAGE Backlog" not in found("PAGE Backlog growing.")


def test_a_pair_with_a_part_written_as_code_is_a_path() -> None:
    got = found("Repos marten-lab/marten_ws and marten-lab/shelfdiff; HPA on autoscaling/v2.")
    assert got["marten-lab/marten_ws"] == "path" and got["marten-lab/shelfdiff"] == "path"
    assert got["autoscaling/v2"] == "path"
    got = found("It goes to the gain/loss account, and sign-up/login is down.")
    assert "gain/loss" not in got and "sign-up/login" not in got


def test_a_host_numbered_from_a_zero_is_a_code_name() -> None:
    got = found("Job died on gpu02; a cron on gpu01-04 warns. Python 3.10 and p99 stay out.")
    assert got["gpu02"] == "identifier" and got["gpu01-04"] == "identifier"
    assert "p99" not in got


def test_a_hyphenated_word_with_an_abbreviation_is_a_system() -> None:
    got = found("app -> mobile-bff -> card; ran stress-ng; the db-migrate Job; a well-known step.")
    assert got["mobile-bff"] == "system" and got["stress-ng"] == "system"
    assert got["db-migrate"] == "system"
    assert "well-known" not in got


def test_a_custom_header_is_one_code_name_and_a_severity_is_a_rank() -> None:
    got = found("Signed in X-Kyrio-Signature. Declared INC-2291 sev-2, later SEV1.")
    assert got["X-Kyrio-Signature"] == "identifier"
    assert "Kyrio-Signature" not in got and "sev-2" not in got and "SEV1" not in got


def test_a_path_running_on_from_a_placeholder_is_a_template() -> None:
    got = found("App-of-apps under clusters/<cluster>/apps, the rest in clusters/base/apps.")
    assert "/apps" not in got and got["clusters/base/apps"] == "path"


def test_a_four_part_number_is_a_hotfix_of_a_known_release() -> None:
    text = "Built 0.9.4.1 and tested it; the host is 10.0.0.1."
    got = {e.text: e.kind for e in extract_entities(text, known={"v0.9.4"})}
    assert got["0.9.4.1"] == "version" and "10.0.0.1" not in got
    assert "0.9.4.1" not in found(text)


def test_a_call_with_arguments_is_a_code_name_but_not_a_plurals_s() -> None:
    got = found("The filter is `where x > (select max(updated_at) from t)`; lerp(a, b, t) too.")
    assert got["max"] == "identifier"
    assert got["lerp"] == "identifier"
    assert "approval" not in found("Two approval(s) are needed before the deploy.")


def test_a_key_with_a_value_written_as_code_is_one_code_name() -> None:
    got = found("ndots:5 means four search domains; keys match render:v2:* and state:modified+.")
    assert got["ndots:5"] == "identifier"
    assert got["render:v2:*"] == "identifier"
    assert got["state:modified+"] == "identifier"
    assert "sim:real" not in found("Then a sim:real ratio sweep for the paper.")


def test_a_two_part_number_after_release_is_a_release_before_any_is_known() -> None:
    got = found("The page-thumbnail cache came with release 2026.3 on Thursday.")
    assert got["2026.3"] == "version"
    assert "2.9" not in found("Read the 2.8 and 2.9 release notes first.")


def test_an_acronym_off_the_generic_list_is_a_name() -> None:
    got = found("Moved the jobs to GKE; the PR waits on CI and the VPN, the EKS cluster is up.")
    assert got["GKE"] == "name" and got["EKS"] == "name"
    assert not {"PR", "CI", "VPN"} & set(got)
    assert not {"II", "R&D", "PC"} & set(found("Phase II of the R&D plan runs on the PC."))


def test_an_acronym_inside_a_token_written_as_code_is_not_a_name() -> None:
    got = found("Field PID-3 of <CLIENT>_<MSG>, binlog_format=ROW, locale pt-BR; INSERT IGNORE.")
    assert not {"PID", "CLIENT", "MSG", "ROW", "BR", "IGNORE"} & set(got)
    assert found("Keys are AWS-managed now.")["AWS"] == "name"  # an English compound after it


def test_an_acronym_before_a_model_number_is_one_name() -> None:
    got = found("Both RX 6600 and RTX 3070 crash; the SOC 2 report; we run RDS 16.4 and WP1 19 h.")
    assert {"RX 6600", "RTX 3070", "SOC 2", "RDS"} <= set(got)
    assert not {"RDS 16.4", "WP1 19"} & set(got)


def test_a_flag_of_one_dash_is_an_identifier_in_a_command_not_in_prose() -> None:
    got = found("Ran `go test -run TestLock -count=1 ./...` and `rsync -a -vvv src/ dst/`; a -p.")
    assert {"-run", "-count", "-a", "-vvv"} <= set(got)
    assert got["-run"] == "identifier" and "-p" not in got


def test_acronyms_joined_by_a_plus_are_code_and_a_message_in_backticks_names_no_program() -> None:
    got = found("VGM moves to `MEA+AAE+VGM+KGM:24850` now; `version not found` in Notepad++.")
    assert not {"AAE+", "AAE", "VGM+", "KGM", "version"} & set(got)
    assert "Notepad++" in got and "brew" in found("Ran `brew install jq` twice.")


def test_a_revision_a_range_with_one_prefix_and_a_token_with_plus_signs() -> None:
    got = found("Board rev C, then Rev C.1; cranes QC01-QC04 and SWE.1-SWE.6; `MEA+AAE+VGM` set.")
    assert got["rev C"] == got["Rev C.1"] == "version"
    assert got["QC01-QC04"] == got["SWE.1-SWE.6"] == got["MEA+AAE+VGM"] == "identifier"
    assert "revert" not in found("The revert was fine.")


def test_two_digits_after_an_acronym_are_a_release_or_a_value_unless_the_name_is_listed() -> None:
    got = found("Ported to JUCE 8 from JUCE 7 on ROS 2 with CCE 18; the step ended RC 4 at CRF 23.")
    assert {"JUCE", "ROS 2", "CCE"} <= set(got)
    assert not {"JUCE 8", "JUCE 7", "RC 4", "CCE 18", "CRF 23"} & set(got)


def test_two_named_acronyms_side_by_side_are_one_name() -> None:
    got = found("We use AWS DMS for the copy and SAML SSO for the login.")
    assert "AWS DMS" in got and "SAML" in got and "SAML SSO" not in got


def test_an_acronym_counted_with_an_article_and_no_noun_is_a_common_noun() -> None:
    got = found("Need a TIA before launch, then a ZFS snapshot of the volume.")
    assert "TIA" not in got and got["ZFS"] == "name"
    assert "NRF" not in found("Polled from each NRF, then the AMF.")


def test_the_acronyms_a_text_uses_as_a_kind_of_thing() -> None:
    from tribalmemory.entities.acronyms import kind_words

    text = (
        "Two NRFs answer; the SEPPs too. Polled from each NRF and per ROP. Both ADAHRS. "
        "Took a ZFS snapshot on an EKS-managed node; AWS and the OFP release."
    )
    assert kind_words(text) == {"NRF", "SEPP", "ROP", "ADAHRS"}


def test_an_acronym_the_project_uses_as_a_kind_of_thing_names_nothing() -> None:
    """A known plural (``NRFs``: the project wrote the acronym as a kind of thing) makes the
    acronym no name, wherever it is written; another acronym stays one."""
    text = "The NRF on Ericsson PCC rejected the AMF registration."
    before = {e.text for e in extract_entities(text)}
    after = {e.text for e in extract_entities(text, {"NRFs"})}
    assert {"NRF", "AMF", "PCC"} <= before
    assert after == before - {"NRF"}


def test_a_small_particle_inside_a_name_keeps_it_whole() -> None:
    got = found("Booked Casa do Rio for Ana de Souza; How do I ask Winnie?")
    assert "Casa do Rio" in got and "Ana de Souza" in got
    assert "Casa" not in got and "Winnie" in got and "How do I" not in got


def test_a_place_after_a_clock_time_in_am_or_pm_names_a_time_zone() -> None:
    assert "London" not in found("The call is at 3pm London, with Ayla.")
    assert "Ayla" in found("The call is at 3pm London, with Ayla.")


def test_a_listed_tool_in_small_letters_is_a_name_in_prose() -> None:
    got = extract_entities(
        "Switched the tests to vitest and put pgbouncer in front of the db; "
        "docker-compose starts both, next to `uv run pytest -x`."
    )
    kinds = {e.text: e.kind for e in got}
    assert kinds["vitest"] == kinds["pgbouncer"] == kinds["docker-compose"] == "name"
    assert kinds["pytest"] == "name"  # a listed tool in a command, after its program
    assert not {"tests", "front", "db", "x"} & set(kinds)  # unlisted words are not


def test_a_listed_tool_inside_a_path_link_or_code_name_is_not_found_again() -> None:
    text = (
        "pgbouncer reads pgbouncer.ini; set redis_url and --redis for redis, not "
        "https://github.com/eslint/eslint nor /usr/local/bin/gunicorn, call numpy.array(), "
        "run image redis:7 and echo '<?php' in eslint."
    )
    got = sorted((e.text, e.kind) for e in extract_entities(text))
    assert [t for t, _ in got].count("redis") == 1 and ("redis", "name") in got
    assert ("pgbouncer", "name") in got and ("pgbouncer.ini", "path") in got
    assert ("eslint", "name") in got and [t for t, _ in got].count("eslint") == 1
    assert not {"pgbouncer.ini", "gunicorn", "numpy", "php"} & {t for t, k in got if k == "name"}


def test_a_tool_named_by_an_english_word_is_found_only_beside_a_release() -> None:
    got = found("We pinned celery 5.3.1 and devise (4.9.4); black, flask and celery do the rest.")
    assert {"celery", "devise"} <= set(got)
    spans = [(e.text, e.start) for e in extract_entities("celery 5.3.1 and celery alone")]
    assert spans == [("celery", 0)]
    assert not {"black", "flask", "rest"} & set(got)


def test_a_listed_tool_capitalised_alone_opening_a_sentence_is_a_name() -> None:
    assert found("Pytest flaked again on CI.")["Pytest"] == "name"
    assert "Flaked" not in found("Flaked again on CI.")  # an ordinary opener stays dropped


def test_a_version_folder_and_a_page_anchor_stay_in_their_path() -> None:
    got = found(
        "Wrote manifests/v3.2/stats.json, /scratch/wren/data/v3.2/ and classes/Client.md#join."
    )
    assert got == {
        "manifests/v3.2/stats.json": "path",
        "/scratch/wren/data/v3.2/": "path",
        "classes/Client.md#join": "path",
    }


def test_a_hyphenated_host_a_merge_request_and_globs_of_code_names_are_whole() -> None:
    got = found("Deployed to dm-staging.tallow.internal via !418; SENSOR_ATTR_* and @docusaurus/*.")
    assert got == {
        "dm-staging.tallow.internal": "url",
        "!418": "ticket",
        "SENSOR_ATTR_*": "identifier",
        "@docusaurus/*": "identifier",
    }
    assert found("Unpacked my-file.tar.gz there.") == {"my-file.tar.gz": "path"}


def test_the_far_end_of_another_product_s_upgrade_is_no_release() -> None:
    assert found("Bumped zephyr v3.7.1 -> v4.1.0 on the branch.") == {"zephyr": "name"}
    assert found("We ship v1.2.0 -> v1.3.0 today.") == {"v1.2.0": "version", "v1.3.0": "version"}


def test_ranks_languages_countries_and_built_in_types_alone_are_no_names() -> None:
    assert found("Tier 2 answers what Tier 1 in Dublin escalates.") == {"Dublin": "name"}
    assert found("Callers from Brazil want Yoruba and German prompts.") == {}
    assert found("A Vec of String, read in 256 KiB chunks.") == {}
    assert found("Tokens come from Style Dictionary and Swiss Re pays.") == {
        "Style Dictionary": "name",
        "Swiss Re": "name",
    }


def test_generic_acronyms_of_other_trades_and_plurals_in_es_are_no_names() -> None:
    assert found("The PSU browned out the MCU over UART while HIL ran; WER rose.") == {}
    assert found("CI green on all three OSes.") == {}


def test_generic_acronyms_with_digits_addresses_and_job_numbers_are_no_entities() -> None:
    assert found("It is UTF-16 over I2C, hashed with SHA-256.") == {}
    assert found("Ship it to Mill Lane, Rose Cottage.") == {}
    assert found("HIL job #5512 failed, PR #5513 fixed it.") == {"#5513": "ticket"}


def test_capitalised_words_inside_code_of_several_words_are_no_names() -> None:
    assert found("The job died: `[Rank 12] Watchdog caught a timeout` on b05.") == {}
    assert found("Renamed our private attrs in a changeset.") == {}


def test_words_between_two_spans_of_code_are_prose() -> None:
    # a closing backtick and the next opening one enclose no code
    text = "Repos: `whisk` holds the Django monolith and `web` the React screens."
    assert found(text) == {
        "whisk": "identifier",
        "Django": "name",
        "web": "identifier",
        "React": "name",
    }


def test_a_link_in_backticks_ends_before_the_closing_backtick() -> None:
    assert found("Pulls `https://feeds.example.org/obits.xml` nightly.") == {
        "https://feeds.example.org/obits.xml": "url"
    }


def test_a_program_or_keyword_named_by_an_english_word_is_not_taught_to_prose() -> None:
    text = "Ran `module load cpe/24.07`; the meta module stays. Calls go through `use mpi` now."
    assert found(text) == {"module": "identifier", "cpe/24.07": "path"}


def test_an_acronym_made_a_verb_and_a_unit_before_a_name_are_no_part_of_it() -> None:
    assert found("The Amon files CMORised by Kestrel, 38 TB NetCDF4 on Corrie.") == {
        "Amon": "name",
        "Kestrel": "name",
        "NetCDF4": "identifier",
        "Corrie": "name",
    }


def test_a_share_s_folder_keeps_its_closing_backslash() -> None:
    share = "\\\\kw-fs01\\lab\\ALS\\"
    assert found(f"Reads `{share}` nightly.") == {share: "path"}


def test_zones_of_australia_and_generic_acronyms_of_maps_and_wi_fi_are_no_names() -> None:
    assert found("Logged in AWST by Priya; the GIS layer and the SSID moved to Leapfrog.") == {
        "Priya": "name",
        "Leapfrog": "name",
    }


def test_a_word_in_backticks_described_in_brackets_names_a_component_found_in_prose() -> None:
    first = "Repos: `marquee` (Next.js site on ECS), `tally` (our results API), `main` = prod."
    names = {e.text: e.kind for e in extract_entities(first)}
    assert names == {
        "marquee": "name",
        "Next.js": "name",
        "ECS": "name",
        "tally": "name",
        "main": "identifier",
    }
    later = "Deployed marquee; it polls tally now, and main is green."
    known = {"marquee", "tally"}  # what the store keeps of the first memory's names
    assert {e.text for e in extract_entities(later, known)} == {"marquee", "tally"}


def test_a_word_with_a_digit_glued_to_a_longer_code_is_no_name() -> None:
    got = found("Ran on rack FCC-R2 with Junos 23.4R2-S3 and pin X1.34; the PS5-only build.")
    assert not {"R2", "S3", "X1"} & set(got)
    assert "PS5" in got


def test_a_tracker_s_project_keys_alone_name_nothing() -> None:
    text = "Jira: TRD trading, PLAT platform. Every change needs an FSW ticket; Kafka too."
    assert found(text) == {"Jira": "name", "Kafka": "name"}
    assert found("Jira keys: HAL, MAR, CORE; see CORE-118.") == {
        "Jira": "name",
        "CORE-118": "ticket",
    }


def test_a_company_s_legal_form_ends_its_name() -> None:
    text = "Pellow & Hart LLP, Helgar Energy AS and Brannock Trading B.V. signed; the U.S. too."
    assert found(text) == {
        "Pellow & Hart LLP": "name",
        "Helgar Energy AS": "name",
        "Brannock Trading B.V.": "name",
    }


def test_holidays_units_of_energy_ranks_and_a_word_before_a_hyphenated_number_are_no_names() -> (
    None
):
    text = (
        "Before Christmas: 1.2 TWh on TTF Cal-27, Patch 4 of Annex 3, Type-5 routes, DST by Ines."
    )
    assert found(text) == {"TTF": "name", "Ines": "name"}


def test_a_word_described_as_the_thing_in_brackets_is_no_component() -> None:
    assert found("Tables: `employees` (the person) and `ledger` (append-only).") == {
        "employees": "identifier",
        "ledger": "name",
    }


def test_a_vendor_s_named_interface_keeps_api_and_currencies_are_values() -> None:
    text = "Prices in KZT and VND; through the PI Web API and the Collections API; Zendesk API."
    assert found(text, {"zendesk"}) == {
        "PI Web API": "name",
        "Collections API": "name",
        "Zendesk": "name",
    }


def test_components_listed_in_small_letters_with_descriptions_are_names() -> None:
    text = "Our services: bidgen (day-ahead bids), nomi (the gas nominations), desktop (a big one)."
    assert found(text) == {"bidgen": "name", "nomi": "name"}  # desktop: an English word
    assert found("Capacity is fine; the wallet (60 MW) is full.") == {}  # one item: no list


def test_a_name_opening_with_its_number_is_found_but_not_a_rate() -> None:
    assert found("Keys in 1Password; schedules to 50Hertz over a 100Mbps link.") == {
        "1Password": "name",
        "50Hertz": "name",
    }


def test_a_surname_with_an_apostrophe_is_whole() -> None:
    text = "Signed by Tom O'Rourke; then O'Brien's team and Lena's."
    assert set(found(text)) == {"Tom O'Rourke", "O'Brien", "Lena"}


def test_servicenow_records_and_support_cases_are_tickets() -> None:
    text = "CHG0072010 for Thursday; Meraki case 11829304 and support case (118842); 12345 rows."
    assert found(text) == {
        "CHG0072010": "ticket",
        "Meraki": "name",
        "11829304": "ticket",
        "118842": "ticket",
    }


def test_a_key_numbered_by_one_digit_after_its_hyphen_is_an_identifier() -> None:
    text = "PID-3 repeats; the KRK-1 pass; Buenos Aires (UTC-3) and UTF-8 are no keys."
    assert found(text) == {"PID-3": "identifier", "KRK-1": "identifier"}  # a zone's place


def test_the_key_of_a_setting_written_as_code_is_an_identifier() -> None:
    assert found("Set `revalidate = 60` and `COBVER=64`; `a == b` compares.") == {
        "revalidate": "identifier",
        "COBVER": "identifier",
    }


def test_a_route_keeps_its_query_but_not_a_question_mark() -> None:
    text = (
        "Calls /v1/spend?campaign=&day= and GET `/items?limit=5`, then /cover?at=, fine. Is it /v2?"
    )
    assert set(found(text)) == {"/v1/spend?campaign=&day=", "/items?limit=5", "/cover?at=", "/v2"}


def test_a_clause_of_a_standard_is_whole_with_its_numbers() -> None:
    assert found("Split duty per ORO.FTL.220; targets SUP.10, SWE.1-SWE.6 and IR.21.") == {
        "ORO.FTL.220": "identifier",
        "SUP.10": "identifier",
        "SWE.1-SWE.6": "identifier",
        "IR.21": "identifier",
    }


def test_asn_1_is_a_notation_not_a_clause() -> None:
    assert "ASN.1" not in found("A lot of ASN.1 BER by hand.")


def test_a_marker_between_hashes_is_one_identifier() -> None:
    assert found("The file ends inside `#DATA#`, with no `#END#`.") == {
        "#DATA#": "identifier",
        "#END#": "identifier",
    }


def test_a_setting_key_keeps_its_sections() -> None:
    assert found("The timeout is `Robot:OutputTimeoutMs=10000`.") == {
        "Robot:OutputTimeoutMs": "identifier"
    }


def test_languages_with_a_hyphen_or_a_dot_are_whole() -> None:
    assert found("Tiles in Objective-C, the bridge on Objective-C++ and the tool in .NET 8.") == {
        "Objective-C": "name",
        "Objective-C++": "name",
        ".NET": "name",
    }


def test_a_pre_release_is_named_with_its_v() -> None:
    assert canonical("2.4.0-rc3") == canonical("v2.4.0-rc3") == "v2.4.0-rc3"


def test_a_release_keeps_its_pre_release_part() -> None:
    assert found("Staging on 2026.11.0-rc1; the fix goes in v2.4.0-rc4, then 1.4.0-beta.2.") == {
        "2026.11.0-rc1": "version",
        "v2.4.0-rc4": "version",
        "1.4.0-beta.2": "version",
    }


def test_a_component_described_from_a_dotted_name_is_known() -> None:
    assert found("Repos: `robolink` (.NET 8 bridge to the robots).")["robolink"] == "name"


def test_a_route_and_its_query_string_are_one_entity() -> None:
    assert canonical("/v1/spend?campaign=&day=") == canonical("/v1/spend") == "/v1/spend"
    assert canonical("wss://pi-web01/channel?webId=1") == "wss://pi-web01/channel"
    (route,) = extract_entities("Calls GET /v1/spend?campaign=&day= each hour.")
    assert (route.text, route.name) == ("/v1/spend?campaign=&day=", "/v1/spend")


def test_a_merge_request_with_its_repository_is_its_number() -> None:
    names = {e.text: e.name for e in extract_entities("Merged fabric-avd!57 after repo#12.")}
    assert names == {"fabric-avd!57": "!57", "repo#12": "#12"}


def test_generations_phases_and_safety_levels_are_ranks() -> None:
    text = "Link up at Gen4; Calyra (Ph3 psoriasis); an ASIL B part, DAL C code; Round-2 mail."
    assert found(text) == {"Calyra": "name"}


def test_a_template_s_first_part_names_nothing() -> None:
    assert found("Dev work goes in DEV_<USER> databases; we skip the Cloud_ sections.") == {}


def test_a_pod_s_state_is_a_value() -> None:
    assert found("The ingest pod is OOMKilled at 16Gi, then in CrashLoopBackOff.") == {}


def test_serial_lines_levels_and_carbon_units_are_values() -> None:
    text = "The meters sit on the RS-485 trunk in the L1 comms room: 1,284 tCO2e, -18 dBFS."
    assert found(text) == {}


def test_a_range_of_levels_stays_one_identifier() -> None:
    assert found("Lanes L1-L4 and cranes QC01-QC04.") == {
        "L1-L4": "identifier",
        "QC01-QC04": "identifier",
    }


def test_pairs_sharing_their_first_part_are_paths() -> None:
    text = "UI in quoin/tessera, carbon in quoin/carbonledger; 38 credits/day, 81 credits/h."
    assert found(text) == {"quoin/tessera": "path", "quoin/carbonledger": "path"}


def test_a_pair_alone_stays_two_words() -> None:
    assert found("Dashboards in quoin/tessera.") == {}


def test_a_standard_is_its_body_and_number_without_its_year() -> None:
    text = "Times as ISO 8601; EN 50716:2023 replaces EN 50128; IEC 61400-25 node ids; OREAS 238."
    assert found(text) == {
        "ISO 8601": "name",
        "EN 50716": "name",
        "EN 50128": "name",
        "IEC 61400-25": "name",
        "OREAS": "name",  # a reference material's code, not a standard: AS 238 is no part
    }


def test_a_link_s_scheme_may_hold_a_dot() -> None:
    assert found("Server at opc.tcp://10.62.4.20:4840 today.") == {
        "opc.tcp://10.62.4.20:4840": "url"
    }


def test_a_model_keeps_its_release_and_its_size() -> None:
    text = "Swapped DeBERTa-v3-large for EfficientNet-B3 and `bge-small-en-v1.5` embeddings."
    assert found(text) == {
        "DeBERTa-v3-large": "name",
        "EfficientNet-B3": "name",
        "bge-small-en-v1.5": "identifier",
    }


def test_a_unit_by_letters_and_a_lettered_number_is_one_identifier() -> None:
    assert found("Racks FCC-R2 and SB-A07 show FP-E212; prefix PL-TARNWICK-V4.") == {
        "FCC-R2": "identifier",
        "SB-A07": "identifier",
        "FP-E212": "identifier",
        "PL-TARNWICK-V4": "identifier",
    }


def test_an_image_keeps_its_whole_tag() -> None:
    text = "Base image golang:1.23-bookworm, then `tritonserver:25.08-py3` and postgres:16.4."
    assert found(text) == {
        "golang:1.23-bookworm": "identifier",
        "tritonserver:25.08-py3": "identifier",
        "postgres:16.4": "identifier",
    }


def test_a_team_handle_keeps_its_owner() -> None:
    assert found("The owners are `@twofold-tns/le-response` now.") == {
        "@twofold-tns/le-response": "identifier"
    }


def test_a_rank_or_a_measure_joined_to_its_number_names_no_system() -> None:
    text = "Scores top-1 71.4 % and top-3 88.9 % after round-2, read as utf-8; edge-01 is fine."
    assert found(text) == {"edge-01": "system"}


def test_a_long_number_or_a_namespaced_name_in_backticks_is_one_identifier() -> None:
    text = "HB `9781837470129` ships; no `xml:lang` on it, then `status:COMP`; note `12:30`."
    assert found(text) == {
        "9781837470129": "identifier",
        "xml:lang": "identifier",
        "status:COMP": "identifier",
    }


def test_industrial_and_payment_standards_of_two_words_are_one_product() -> None:
    text = "The gateway speaks OPC UA and Modbus TCP; the PCI DSS scope shrank."
    assert found(text) == {"OPC UA": "name", "Modbus TCP": "name", "PCI DSS": "name"}


def test_a_code_in_an_authority_s_register_is_one_identifier() -> None:
    text = "From EPSG:28351 to EPSG:7851; the weight as `MEA+AAE+VGM+KGM:24850`."
    assert found(text) == {"EPSG:28351": "identifier", "EPSG:7851": "identifier"}


def test_a_module_s_release_is_no_team_release_also_written_as_code() -> None:
    text = "We moved `github.com/coder/websocket` v1.8.12 -> v1.8.13 and x/net v0.38.0."
    assert found(text) == {"github.com/coder/websocket": "url"}


def test_a_first_name_ending_like_a_nationality_is_a_name() -> None:
    assert found("We met Hamish and Manish today; Polish and Chinese docs.") == {
        "Hamish": "name",
        "Manish": "name",
    }


def test_an_article_of_a_law_keeps_its_paragraphs() -> None:
    assert found("Under Art. 24(2) and Art. 6(1)(f) we report.") == {
        "Art. 24(2)": "identifier",
        "Art. 6(1)(f)": "identifier",
    }


def test_a_range_of_lettered_units_is_one_identifier() -> None:
    text = "Producers CVD-P05..P09 and SKUA-01..SKUA-18; thickness on MET-TF03 drifts."
    assert found(text) == {
        "CVD-P05..P09": "identifier",
        "SKUA-01..SKUA-18": "ticket",
        "MET-TF03": "identifier",
    }


def test_a_korean_given_name_with_its_hyphen_is_one_name() -> None:
    names = found("Then Jae-won Park and Hyun-woo agreed. Go-live after the Sign-in fix.")
    assert names["Jae-won Park"] == names["Hyun-woo"] == "name"
    assert "Go-live" not in names and "Sign-in" not in names  # English compounds


def test_a_numbered_code_before_a_place_stands_alone() -> None:
    text = "Tills at S022 Bristol Harbourside run TMF620 OpenAPI; the P400 Plus too."
    assert found(text) == {
        "S022": "name",
        "Bristol Harbourside": "name",
        "TMF620": "name",
        "OpenAPI": "identifier",
        "P400 Plus": "name",
    }


def test_a_saint_s_name_without_its_dot_keeps_its_s() -> None:
    text = "Scans from St Cuthbert's Hospital; the Cardiff St Mary's store; St Albans."
    assert found(text) == {
        "St Cuthbert's Hospital": "name",
        "Cardiff St Mary's": "name",
        "St Albans": "name",
    }


def test_a_python_package_is_found_by_its_prefix() -> None:
    text = "Bumped pydicom and pymodbus; the pyramid scheme."
    assert found(text) == {"pydicom": "name", "pymodbus": "name"}


def test_a_yaml_setting_s_key_in_backticks_is_an_identifier() -> None:
    names = found("Tools run with `verify: always`; alerts `for: 15m`.")
    assert names == {"verify": "identifier"}  # `for` is a keyword of code, no setting


def test_an_english_word_and_its_small_number_are_one_name() -> None:
    text = "Aircraft in Hangar 5 for District 4 under USPS Pub 28; Java 21 in prod."
    assert found(text) == {
        "Hangar 5": "name",
        "District 4": "name",
        "USPS Pub 28": "name",
        "Java": "name",  # a product's release, not part of its name
    }


def test_a_document_s_part_and_its_number_name_nothing() -> None:
    text = "The A320 MPD Rev 34 is out; see Section 13 and Schedule 2."
    assert found(text) == {"A320": "name"}


def test_a_measure_after_a_tool_s_word_is_no_release() -> None:
    text = "The sparge runs air 0.5 slpm now; flask 2.3 on the API."
    assert found(text) == {"flask": "name"}


def test_a_chemical_formula_names_nothing() -> None:
    assert found("The cascade goes stirrer, air, then O2; CO2 stripping and pCO2.") == {}


def test_a_unit_letter_after_a_number_is_no_part_of_the_name() -> None:
    text = "Production is a 2,000 L HyPerforma; PD has a 50 L Biostat STR."
    names = found(text)
    assert "HyPerforma" in names and "Biostat" in names
    assert not any(name.startswith("L ") for name in names)


def test_a_model_s_numbered_variant_is_one_identifier() -> None:
    text = "Engines (LEAP-1A, CFM56-7B) and stockers STK-4A01..4A12."
    assert found(text) == {
        "LEAP-1A": "identifier",
        "CFM56-7B": "identifier",
        "STK-4A01..4A12": "identifier",
    }


def test_a_name_keeps_its_plus() -> None:
    names = found("We hand off to SolarAPP+ now; `dbt build -s fct_orders+` in CI.")
    assert names["SolarAPP+"] == "identifier" and names["fct_orders"] == "identifier"


def test_a_unit_over_a_unit_is_no_path() -> None:
    assert found("Titer 3.2 g/L at 150 g/mol, 40 W/m3; see docs/runbooks/oncall.md.") == {
        "docs/runbooks/oncall.md": "path"
    }


def test_the_prefix_of_a_project_s_ticket_keys_names_nothing() -> None:
    assert found("Jira keys: PAY- payments, LOY- loyalty; see PAY-1182.") == {
        "Jira": "name",
        "PAY-1182": "ticket",
    }


def test_products_whose_names_hold_a_generic_acronym_are_whole() -> None:
    assert found("Reports moved from SQL Server to Power BI; the API is ASP.NET Core.") == {
        "SQL Server": "name",
        "Power BI": "name",
        "ASP.NET Core": "name",
    }
    assert found("Rotated it in AWS Secrets Manager.") == {"AWS Secrets Manager": "name"}


def test_names_of_configuration_in_capitals_and_keys_of_several_groups_are_whole() -> None:
    got = found("Applied TRANSIT-CORVANE-IN per VAL-BI-007, not HMAC-SHA256, see fabric-avd!57.")
    assert got == {
        "TRANSIT-CORVANE-IN": "identifier",
        "VAL-BI-007": "ticket",
        "fabric-avd!57": "ticket",
    }


def test_two_names_of_one_kind_joined_by_a_slash_are_two() -> None:
    assert found("Drained mlb-spine1/mlb-spine2 and cr1.hfd/cr1.crn tonight.") == {
        "mlb-spine1": "system",
        "mlb-spine2": "system",
        "cr1.hfd": "identifier",
        "cr1.crn": "identifier",
    }


def test_a_generic_acronym_before_a_long_number_names_a_value_and_hosts_keep_prefixes() -> None:
    assert found("Trunked VLAN 2120 to agc-nas01; SOC 2 audit next.") == {
        "agc-nas01": "system",
        "SOC 2": "name",
    }
    assert found("Pulls System.Text.Json 8.0.4 in.") == {"System.Text.Json": "identifier"}
    assert found("Check Port-Channel1000 today.") == {"Port-Channel1000": "identifier"}


def test_keys_sql_words_local_hosts_and_mixed_case_generic_acronyms_are_no_entities() -> None:
    assert found("Press Tab, then Escape closes it; Shift reverses.") == {}
    assert found("The outbox reads FOR UPDATE SKIP LOCKED, then SET sent_at.") == {
        "sent_at": "identifier"
    }
    assert found("It runs on localhost:5000 behind the DMZ.") == {}
    assert found("The IdP asks for mTLS; QoS 1 on each vCPU.") == {}
    assert found("We asked Sam and Tim.") == {"Sam": "name", "Tim": "name"}  # not SAM, TIM


def test_methods_machine_types_and_a_dotted_name_s_last_letter_are_whole() -> None:
    assert found("Wrapped Score#save in a transaction on db.r6g.4xlarge.") == {
        "Score#save": "identifier",
        "db.r6g.4xlarge": "identifier",
    }
    assert found("Moved the pool to m6i.2xlarge.") == {"m6i.2xlarge": "identifier"}
    assert found("Read MMXU1.TotW.mag.f from it.") == {"MMXU1.TotW.mag.f": "identifier"}


def test_an_environment_opening_a_hyphenated_word_makes_it_a_system() -> None:
    got = found("Load test on staging-perf, then prod-admin; staging-only flags stay.")
    assert got == {"staging-perf": "system", "prod-admin": "system"}


def test_trade_acronyms_of_utilities_schools_and_freight_are_no_names() -> None:
    assert found("The RTU sends DNP3 to the ADMS via the FEP.") == {"DNP3": "name"}
    assert found("The SIS feeds the LMS; the POD lands in the WMS over EDI.") == {}
    assert found("Events go through Pub/Sub.") == {"Pub/Sub": "name"}


def test_streaming_acronyms_bit_rates_and_wi_fi_are_no_entities_tv_products_are_whole() -> None:
    assert found("The CMAF ladder: HEVC at 6 Mbps, a VMAF of 93, HLS and DASH over Wi-Fi.") == {}
    assert found("Playback fails on Android TV and Apple TV.") == {
        "Android TV": "name",
        "Apple TV": "name",
    }


def test_a_generic_acronym_with_a_digit_is_no_name_even_once_known() -> None:
    text = "AV1 ships next week."
    assert extract_entities(text, known={"AV1", "SVT-AV1"}) == []


def test_hardware_keeps_its_model_number_with_its_makers_name() -> None:
    assert found("Swapped the core to an Arista 7050SX3-48YC8 and a Moxa NPort 5150.") == {
        "Arista 7050SX3-48YC8": "name",
        "Moxa NPort 5150": "name",
    }
    assert found("The vans run Kovra TG-2 trackers; the lab has a Halvard 9000.") == {
        "Kovra TG-2": "name",
        "Halvard 9000": "name",
    }


def test_releases_quantities_tickets_and_weeks_are_no_model_numbers() -> None:
    text = (
        "Moved to Postgres 16 in 2026 with Python 3.12; Tomasz wk38 on call; Halvard 32G "
        "boxes; the bug is Sentry PAYMENTS-3K2; the guide covers X12 856."
    )
    assert {"Postgres", "Python", "Tomasz", "Halvard", "Sentry", "X12"} <= set(found(text))
    assert not any(" " in surface for surface in found(text))


def test_a_known_model_number_alone_names_its_hardware() -> None:
    known = {"Norrvik NX-7", "Kovra TG-2", "RTX 3070"}
    got = {
        e.text: e.name for e in extract_entities("The NX-7 rebooted; TG-2 and RTX 3070 too.", known)
    }
    assert got == {"NX-7": "norrvik-nx-7", "TG-2": "kovra-tg-2", "RTX 3070": "rtx-3070"}
    # two known names end in the same model number: it names neither, only itself
    both = {"Norrvik NX-7", "Halvard NX-7"}
    assert [e.name for e in extract_entities("The NX-7 rebooted.", both)] == ["nx-7"]


def test_a_count_after_a_name_is_no_model_and_a_known_part_number_joins_its_maker() -> None:
    got = found("Timeouts under their tmax (PubMatic 250, Magnite 200).")
    assert set(got) == {"PubMatic", "Magnite"}
    known = {"EM24"}  # found alone in an earlier memory
    text = "The meter is a Carlo Gavazzi EM24 on Modbus."
    assert "Carlo Gavazzi EM24" in {e.text for e in extract_entities(text, known)}


def test_a_range_of_numbered_hosts_is_one() -> None:
    got = found("Drained enc-cpu-01..24 and ocpp-gw-0..5; WYN-HX3-01..04 next.")
    assert set(got) == {"enc-cpu-01..24", "ocpp-gw-0..5", "WYN-HX3-01..04"}


def test_a_model_number_after_an_acronym_names_no_hardware() -> None:
    known = {"ADT A04", "Norrvik NX-7"}  # a message type's trigger event; a maker's model
    names = {e.text: e.name for e in extract_entities("Replayed A04 on the NX-7 rig.", known)}
    assert names.get("A04") != "adt-a04"
    assert names["NX-7"] == "norrvik-nx-7"


def test_argo_cd_is_one_product() -> None:
    assert "Argo CD" in found("Deploys go through Argo CD from the deploy repo.")
