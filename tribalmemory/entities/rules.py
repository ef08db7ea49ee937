"""The table of pattern rules for the entity extraction (:data:`RULES`), each with the text a
memory must hold for it to run (:data:`NEEDLES`)."""

from __future__ import annotations

import re

from tribalmemory.entities.aliases import PRE_RELEASE
from tribalmemory.entities.patterns import CODE_NAME

EXT = (
    r"(?:py|pyi|go|rs|md|rst|toml|ini|cfg|conf|h|hpp|c|cc|cpp|hlsl|cs|csproj|sln|java|kt|kts|"
    r"swift|rb|php|scala|csv|log|json|ya?ml|xml|html?|css|scss|js|jsx|mjs|ts|tsx|vue|txt|tmp|"
    r"bak|sh|ps1|bat|sql|lock|proto|tf|gradle|plist|ipynb|pdf|png|jpe?g|svg|zip|gz|tar|pkg|dll|"
    r"exe|wasm|bed|vcf|bam|cram|fastq|fq|fasta|fa|fna|gtf|gff3?|parquet|avro|h5|hdf5|npy|npz|"
    r"pt|pth|onnx|ckpt|safetensors|pkl|rds|tiff?|wav|flac|mp3|mp4|razor|cshtml|svc|xaml|resx|"
    r"props|bicep|j2|jinja|tpl|nf|smk)"
)
PRE = f"(?:{PRE_RELEASE})?"
"""A release's pre-release part, if any (``-rc3`` of ``2.4.0-rc3``)."""
RANGE = re.compile(r"(?<![\w.-])([A-Z][A-Za-z]*\.?)\d+-\1\d+\b(?![.-]\w)")
"""A range of numbered things with one prefix: ``QC01-QC04``, ``L1-L4``, ``SWE.1-SWE.6``."""
DOTTED_NAME = re.compile(
    r"\b[A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w+)+(?:\.[a-z](?![\w-]|\.\w))?(?:-[a-z0-9]+)*"
    r"(?:\.\*)?|\.\*)"
)
"""Dotted names before humps, a glob (``a.b.*``), with a rule id's hyphens after its last part:
kept after three parts (``go.lang.security.audit.xss-unescaped``), not after two, where they
join an English word (:func:`dotted_name`: ``node.js`` of ``node.js-based``)."""


def dotted_name(surface: str) -> str:
    """A :data:`DOTTED_NAME` match without the hyphens after its one dot (``node.js-based``)."""
    if surface.count(".") == 1 and "-" in surface.partition(".")[2]:
        return surface.partition("-")[0]
    return surface


RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (  # any scheme (gs://, oci://, s3://), a mailbox
        "url",
        re.compile(
            r"\b(?:https?|[a-z][a-z0-9+.-]*)://[^\s)>\]`\"]+"
            r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b"
        ),
    ),
    (  # a host, with its path (golang.org/x/net) and an image's tag (ghcr.io/o/img:1.2); not
        # the first part of a longer name (api.stripe.com.svc.cluster.local)
        "url",
        re.compile(
            r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|io|org|net|dev)\b(?!\.\w)"
            r"(?:(?:/[\w.~%+-]*[\w~%+-])+(?::\w[\w.-]*\w)?)?"
        ),
    ),
    ("url", re.compile(r"(?<![\w.])[a-z][\w-]*(?:\.[a-z][\w-]*)+:\d{2,5}\b")),  # host:port
    (  # a host whose first label has a hyphen, two dots or more: dm-staging.tallow.internal
        "url",
        re.compile(
            r"(?<![\w.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?:\.[a-z][a-z0-9-]*[a-z0-9]){2,}\b(?![.-]\w)"
        ),
    ),
    ("identifier", re.compile(r"\b[A-Z]\w*#[a-z_]\w*[?!]?")),  # a method: Score#save
    (
        "ticket",
        re.compile(r"(?<![\w&])#\d{3,}\b|\b[a-z][\w.-]*/?[\w.-]*\w#\d+\b(?!\.\d)"),
    ),  # repo#12
    (  # not UTC-3; BF-2025-08, VAL-BI-007
        "ticket",
        re.compile(r"\b(?:[A-Z][A-Z0-9]*-)*[A-Z][A-Z0-9]+-\d{2,}(?:-\d+)*\b"),
    ),
    (  # a name of configuration in capitals: TRANSIT-CORVANE-IN, PL-TARNWICK-V4
        "identifier",
        re.compile(
            r"(?<![\w-])[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[A-Z]{3,}[A-Z0-9]*(?:-[A-Z0-9]+)*(?![\w-])"
        ),
    ),
    (  # a GitLab merge request, with its repository: !418, fabric-avd!57
        "ticket",
        re.compile(r"(?:\b[a-z][\w.-]*/?[\w.-]*\w|(?<![\w!]))!\d{2,}\b(?!\.\d)"),
    ),
    (
        "version",
        re.compile(
            r"(?:(?<![\w./])|(?<=\.\.))v\d+(?:\.\d+)+" + PRE + r"\b(?!/)"  # v2.88 (of v2.87..v2.88)
            r"|(?<![\w./])\d+\.\d+\.\d+" + PRE + r"(?![\w.]*\w|/)"  # not a folder: data/v3.2/
        ),
    ),
    ("version", re.compile(r"\b[Rr]ev\.? ?[A-Z](?:\.\d+)?\b(?![\w-])")),  # a revision: rev C
    (  # a time zone of the tz database: Europe/Dublin, America/Argentina/Buenos_Aires
        "identifier",
        re.compile(
            r"\b(?:Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|"
            r"Pacific|Etc)(?:/[A-Z][\w+-]*)+"
        ),
    ),
    (  # a cloud machine type: m6i.2xlarge, db.r6g.4xlarge, cache.r7g.large
        "identifier",
        re.compile(
            r"\b(?:[a-z]+\.)?[a-z]\d+[a-z]*\.(?:\d*xlarge|large|medium|small|micro|nano|metal)\b"
        ),
    ),
    (  # a share's folder keeps its closing backslash: \\fs01\lab\
        "path",
        re.compile(r"(?:\\\\|//)[\w.-]+(?:[\\/][\w.*-]+)*(?:/\.\.\.|(?<=\w)\\(?![\w\\]))?"),
    ),
    (  # Windows: C:\Program Files\x.exe (a space before a capital, inside), Engine\Core
        "path",
        re.compile(
            r"\b[A-Za-z]:\\(?:[\w.-]+(?: [A-Z0-9][\w.-]*)*\\)*[\w.-]*"
            r"|(?<![\w\\/])[\w.-]+(?:\\[\w.*-]+)+\\?"
        ),
    ),
    (  # slash paths (a trailing / kept, [segments] of routes), routes with {parameters},
        # home paths
        "path",
        re.compile(
            r"(?<![\w/.$\[@-])~?(?:/?(?:[\w.*-]+|\[[\w.]+\]|\{[\w.]+\})/)+"
            r"(?:[\w.*-]*\w|\{[\w.]+\})(?:/\*|/(?!\w)|(?:(?<=\.md)|(?<=\.mdx)|(?<=\.html))#[\w-]+)?"
            r"|(?<![\w/$)~<])/[\w-]+(?:/[\w*-]+)*"  # not after a call: a()/b(); a home: ~/x;
            # a closing tag: </script>
            r"|~/(?:[\w.*-]+/)*[\w.*-]*\w/?"
        ),
    ),
    ("path", re.compile(r"(?<![\w/])[\w-]+/(?=[\s,;:)]|\.(?:\s|$)|$)")),
    ("path", re.compile(r"(?<![\w/])\*\.[A-Za-z0-9]+\b")),  # globs: *.pkg
    (
        "path",
        re.compile(
            r"(?<![\w/])[\w*.-]*\." + EXT + r"\b(?!\.\w|-\w)|(?<![\w.])\.[a-z][\w.-]*[a-z]\b"
        ),
    ),
    ("path", re.compile(r"(?<![\w/.])[A-Z][a-z]+(?:/[A-Z][a-z]+)+(?![\w/])")),  # Engine/Physics
    ("identifier", re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+(?:\.[A-Za-z_]\w*)*")),
    ("identifier", re.compile(r"(?<![\w-])--[a-z][\w-]*")),
    ("identifier", re.compile(r"(?<![\w#&])#[a-z][a-z0-9]+(?:-[a-z0-9]+)*")),  # channels, tags
    (  # calls: json.dumps(), max(updated_at); not a plural's (s): PR(s)
        "identifier",
        re.compile(r"@?\b[A-Za-z_][\w.]*(?<=\w)(?=\((?:\)|(?!s\))[^\s)]))"),
    ),
    (  # a clause of a standard or a regulation: capitals, then numbers after dots
        # (ORO.FTL.220, SUP.10, IR.21); not a range's ends (SWE.1-SWE.6), not ASN.1 (a notation)
        "identifier",
        re.compile(r"(?<![\w.-])(?!ASN\.1\b)[A-Z]{2,}(?:\.[A-Z]{2,})*(?:\.\d+)+(?![\w-]|\.\w)"),
    ),
    (  # an article of a law with its paragraphs: Art. 24(2), Art. 6(1)(f)
        "identifier",
        re.compile(r"(?<![\w.])Art\. ?\d+[a-z]?(?:\((?:\d+|[a-z])\))*"),
    ),
    (  # a standard by its body and number (ISO 8601, IEC 61400-25, EN 50716 of EN 50716:2023,
        # 3GPP TS 29.573); not a reference material's (OREAS 239)
        "name",
        re.compile(
            r"(?<![\w/.-])(?:ISO(?:/IEC)?|IEC|EN|IEEE|ANSI|BS|DIN|ASTM|RFC|ARINC|VDA|SAE|ETSI"
            r"|NIST SP|(?:3GPP )?TS) (?:\d{3,}|\d{2}\.\d{3})(?:[-.]\d+)*(?![\w-]|\.\d)"
        ),
    ),
    (  # a model named with its release or its size (DeBERTa-v3-large, EfficientNet-B3):
        # before its parts, a code name and a system
        "name",
        re.compile(
            r"(?<![\w-])[A-Z][A-Za-z]*[a-z][A-Za-z]*-(?:v\d+(?:\.\d+)*|[A-Z]\d+)(?:-[a-z]+)*\b"
            r"(?![.-]\w)"
        ),
    ),
    (  # a marker between hashes: #HEADER#, #END#
        "identifier",
        re.compile(r"(?<![\w#])#[A-Z][A-Z_]*#(?![\w#])"),
    ),
    (  # a setting's key by its sections: Robot:OutputTimeoutMs, Logging:LogLevel:Default
        "identifier",
        re.compile(r"(?<![\w:])[A-Z][a-z]\w*(?::[A-Z][a-z]\w*)+(?![\w:])"),
    ),
    ("identifier", DOTTED_NAME),
    (  # @scope/pkg, @scope/*
        "identifier",
        re.compile(r"(?<![\w@/])@[a-z][\w.-]*/(?:[a-z0-9][\w.-]*\w|\*)"),
    ),
    ("identifier", re.compile(r"\b[A-Za-z]\w*_\*")),  # a glob of code names: SENSOR_ATTR_*
    (  # a code name in a namespace: android:foregroundServiceType, logs:GetLogEvents
        "identifier",
        re.compile(r"\b[a-z][\w-]*:(?:[a-z]+|[A-Z][a-z0-9]+)(?:[A-Z][a-z0-9]*)+\b"),
    ),
    (  # a code in an authority's register: EPSG:7851, EPSG:28351 (not a segment's
        # qualifier, KGM:24850 of MEA+AAE+VGM+KGM:24850)
        "identifier",
        re.compile(r"(?<![\w:=,+.-])[A-Z]{2,6}:\d{3,}(?![\w:.])"),
    ),
    (  # an image and its tag, a release in the tag: postgres:16.4, golang:1.23-bookworm,
        # forge-images:ffmpeg-7.1-r2
        "identifier",
        re.compile(r"(?<![\w/.:@-])[a-z][\w.-]*(?:/[\w.-]+)*:(?=[\w-]*\d\.\d)\w[\w.-]*\w(?![\w/])"),
    ),
    (  # a key and its value written as code, a digit, * or + in the value: ndots:5,
        # render:v2:*, state:modified+ (not two words: sim:real)
        "identifier",
        re.compile(r"(?<![\w/.:@-])[a-z][\w-]*:(?=[\w:*+-]*[\d*+])[\w*+-]+(?::[\w*+-]+)*(?![\w/])"),
    ),
    ("identifier", CODE_NAME),  # the detector's code names (features.identifiers)
    ("identifier", re.compile(r"(?<![\w.$])_[a-z][a-z0-9]*(?:_[a-z0-9]+)*\b")),  # _private
    (  # a log level in capitals: a setting (DEBUG on in prod)
        "identifier",
        re.compile(r"\b(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b"),
    ),
    ("identifier", re.compile(r"\b0x[0-9A-Fa-f]{4,}\b")),
    ("identifier", re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),  # hashes
    (  # a host numbered from a zero (gpu02, node01), a range of them (gpu01-04)
        "identifier",
        re.compile(r"(?<![\w-])[a-z]{2,}0\d(?:-\d\d)?\b(?![.-]\w)"),
    ),
    ("identifier", RANGE),
    (  # headers: Idempotency-Key, X-Kyrio-Signature
        "identifier",
        re.compile(r"\b(?:X-)?[A-Z][a-z]+(?:-[A-Z][A-Za-z0-9]*[a-z0-9])+\b"),
    ),
    (  # a package or a model with its release: tenant-operator-0.9.0, bge-small-en-v1.5
        "identifier",
        re.compile(
            r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:v\d+(?:\.\d+)+|\d+(?:\.\d+){2,})\b(?![.-]\w)"
        ),
    ),
    (  # a unit or a part by its letters and a lettered number: FCC-R2, SB-A07, MET-TF03
        "identifier",
        re.compile(r"(?<![\w.-])[A-Z]{2,6}-[A-Z]{1,2}\d{1,3}(?![\w-]|\.\w)"),
    ),
    (  # a model by its letters and a numbered variant: LEAP-1A, CFM56-7B, BTS7020-2EPA
        "identifier",
        re.compile(r"(?<![\w.-])[A-Z]{2,6}\d*-\d{1,3}[A-Z][A-Z0-9]*(?![\w/-]|[.,]\w)"),
    ),
    ("system", re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b(?:-\*)?")),  # and a glob: x-*
    (  # a key numbered by one digit after its hyphen: a field (PID-3), a unit (KRK-1); not a
        # time zone's offset (UTC-3, ACST-9:30)
        "identifier",
        re.compile(r"(?<![\w.-])(?!(?:UTC|GMT)-)[A-Z][A-Z0-9]{1,4}-\d\b(?![.:-]\w)"),
    ),
    (  # a ServiceNow record (INC0048817, CHG0072010) and a vendor's support case (case 118842)
        "ticket",
        re.compile(
            r"\b(?:INC|CHG|PRB|RITM|REQ|SCTASK|CTASK|PTASK|TASK|KB)\d{7}\b"
            r"|(?<=\bcase )\d{5,}\b|(?<=\bcase \()\d{5,}\b"
        ),
    ),
    (  # a name opening with its number: 50Hertz, 1Password (not a rate: 100Mbps)
        "name",
        re.compile(r"(?<![\w.])\d+(?![KMGT](?:bps|bit|Hz|iB))[A-Z][a-z]{3,}\b"),
    ),
)
NEEDLES: tuple[str | None, ...] = (
    *(None, ".", ":", "-"),  # links, hosts
    *("#", "#", "-", "-", "!", ".", "ev"),  # methods, tickets, keys, MRs, versions, revisions
    "/",  # time zones
    "large",  # machine types
    *(None, "\\", "/", "/", "*.", ".", "/"),  # paths
    *("::", "--", "#", "(", "."),  # C++ names, flags, tags, calls, clauses
    *("Art.", " ", "-"),  # articles, standards, models
    *("#", ":", ".", "@", "_*"),  # markers, settings' keys, dotted names, scopes, globs
    *(":", ":", ":", ":", None, "_", None),  # namespaces, registers, images, keys, code names
    "0x",
    *(None, "0", "-"),
    *("-", ".", "-", "-"),  # ranges, headers, packages with their release, units, models
    "-",  # systems
    "-",  # a key numbered by one digit
    None,  # ServiceNow records and support cases
    None,  # a name opening with its number
)
"""What a text holds for each rule of :data:`RULES` to match (None: no test): a text without
it skips the rule."""
