"""Well-known products whose names the capitalised-name rules would cut (:func:`product_spans`):
a generic acronym inside (``SQL Server``, ``Power BI``, ``IOS XE``), a dotted part
(``ASP.NET Core``, ``.NET Framework``) or a common word (``Service Bus``, ``Key Vault``).
Written from general knowledge of the field's products after reading the errors of the
genomics, network and insurance streams (six of its names were among them: ``SQL Server``,
``Power BI``, ``ASP.NET Core``, ``.NET Framework``, ``IOS XE``, ``Service Bus``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

PRODUCT_PHRASES = frozenset(
    line.strip()
    for line in """
    SQL Server
    ROS 2
    SOC 1
    SOC 2
    SOC 3
    Argo CD
    Argo Workflows
    Argo Rollouts
    Argo Events
    Pub/Sub
    Android TV
    Google TV
    Apple TV
    Fire TV
    Cloud Pub/Sub
    Azure SQL
    Azure SQL Database
    Cloud SQL
    Power BI
    Power Apps
    Power Automate
    Power Query
    Power Platform
    Visual Studio
    Visual Studio Code
    VS Code
    ASP.NET Core
    ASP.NET MVC
    .NET Framework
    .NET Core
    .NET MAUI
    Entity Framework
    Entity Framework Core
    EF Core
    Windows Server
    Windows Forms
    SQL Server Management Studio
    SQL Server Reporting Services
    Azure DevOps
    Azure Functions
    Azure Service Bus
    Service Bus
    Event Hubs
    Event Grid
    Key Vault
    App Service
    App Configuration
    Application Insights
    App Insights
    Log Analytics
    Azure Monitor
    Cosmos DB
    Azure Cosmos DB
    Azure AD
    Entra ID
    Active Directory
    API Management
    Front Door
    Data Factory
    Logic Apps
    Blob Storage
    Azure Blob Storage
    Azure Storage
    Azure Pipelines
    Azure Repos
    Azure Boards
    Container Apps
    Static Web Apps
    Microsoft Teams
    Microsoft 365
    Office 365
    Exchange Online
    SharePoint Online
    Microsoft Entra
    Google Cloud
    Google Cloud Storage
    Cloud Storage
    Cloud Run
    Cloud Functions
    Cloud Build
    Cloud Scheduler
    Cloud Tasks
    Cloud Composer
    Cloud Logging
    Cloud Monitoring
    App Engine
    Compute Engine
    Artifact Registry
    Container Registry
    Secret Manager
    Google Analytics
    Google Sheets
    Google Drive
    Google Docs
    Google Workspace
    Google Play
    Play Console
    Firebase Auth
    Amazon RDS
    Amazon S3
    Amazon EC2
    Amazon SQS
    Amazon SNS
    AWS Lambda
    AWS Glue
    AWS Batch
    Secrets Manager
    Parameter Store
    Step Functions
    Elastic Beanstalk
    Route 53
    App Store
    App Store Connect
    Xcode Cloud
    GitHub Actions
    GitHub Pages
    GitLab CI
    Red Hat
    Red Hat Enterprise Linux
    IOS XE
    IOS XR
    NX-OS
    Junos OS
    Cisco IOS
    Arista EOS
    Mac OS
    Chrome OS
    Apache Kafka
    Apache Spark
    Apache Airflow
    Apache Flink
    Kafka Connect
    Kafka Streams
    Schema Registry
    Spring Boot
    Spring Cloud
    Ruby on Rails
    Next.js
    Node.js
    Vue.js
    Nuxt.js
    React Native
    Jetpack Compose
    Unreal Engine
    Unity Cloud Build
    Oracle Database
    IBM MQ
    Hyper-V
    VMware vSphere
    VMware ESXi
    Active Record
    OPC UA
    OPC DA
    Modbus TCP
    Modbus RTU
    PCI DSS
    CICS TS
    VPC CNI
    Google Play Books
    Objective-C
    Objective-C++
    .NET
    """.splitlines()
    if line.strip()
)
"""Product names of two words or more, as their makers write them."""

_VENDOR = r"(?:(?:AWS|Amazon|Azure|Microsoft|Google|GCP|Apache|Oracle|IBM) )?"
"""The maker written before its product (``AWS Secrets Manager``): one name with it."""
_PHRASE = re.compile(
    r"(?=[A-Z.])(?<![\w.-])"  # a capital or a dot first: most places are rejected at once
    + _VENDOR
    + r"(?:"
    + "|".join(re.escape(p) for p in sorted(PRODUCT_PHRASES, key=len, reverse=True))
    + r")(?![\w-]|\.\w)"
)


def product_spans(text: str) -> Iterable[tuple[int, int]]:
    """Where ``text`` names a product of :data:`PRODUCT_PHRASES`, as written (case and all)."""
    for m in _PHRASE.finditer(text):
        yield m.span()


_MODEL = re.compile(r" ((?=[A-Z0-9-]*\d)[A-Z0-9]+(?:-[A-Z0-9]+)*)(?![\w-]|\.\w|/\w)")
"""A model number after its maker's name: capitals and digits, hyphens between (no small
letters: ``wk38``, ``x3``, ``prod-us-1``, ``0x3004`` are no models)."""
_NOT_A_MODEL = re.compile(
    r"\d{1,3}|(?:19|20)\d\d"  # a release (Node 20), a count (PubMatic 250) or a year
    r"|\d+(?:[KMGTP]i?B|[KMGTB])|\d+-\d+.*"  # a quantity (32G, 5MB); a code, date, range: 85354-9
    r"|[A-Z]{3,}-.*"  # a ticket or an issue (PAY-123, QUILLPATH-8K2)
    r"|([A-Z]+)\d+-\1\d+"  # a range of samples: HG001-HG005
    r"|[A-Z]+\d"  # capitals and one digit may be a name of their own: PS5, S3, FR3
)
"""Numbers after a name that are no model of it."""


def model_spans(text: str, names: Iterable[tuple[str, int, int]]) -> Iterable[tuple[int, int]]:
    """Where a capitalised name (no digits in it) is followed by a model number (``Arista
    7050SX3-48YC8``, ``Moxa NPort 5150``, ``Kovra TG-2``): hardware keeps its model number, one
    name with its maker."""
    for surface, start, end in names:
        if not _maker_like(surface):
            continue  # X12 856, DNP3 SAv5: a standard and its part; Mem_Buf_Limit: a key
        m = _MODEL.match(text, end)
        if m and is_model(m.group(1)):
            yield start, m.end()


def is_model(word: str) -> bool:
    """Whether a word after a maker's name is a model number of it (``7050SX3-48YC8``,
    ``TG-2``, ``5150``; not ``16``, ``2026``, ``32G``, ``PAY-123``, ``PS5``)."""
    return bool(_MODEL.fullmatch(" " + word)) and not _NOT_A_MODEL.fullmatch(word)


def model_of(name: str) -> str | None:
    """The model number a known hardware name ends in (``NX-7`` of ``Norrvik NX-7``), which
    then names it alone; None for other names, and for a model after an acronym alone (``A04``
    of ``ADT A04``, a message type's trigger event: no maker's name)."""
    maker, _, model = name.rpartition(" ")
    if not (_maker_like(maker) and maker[:1].isupper()) or maker.isupper():
        return None
    return model if is_model(model) else None


def _maker_like(name: str) -> bool:
    """Whether a name may be a maker's, before a model number: no digit, no underscore."""
    return bool(name) and not any(c.isdigit() or c == "_" for c in name)
