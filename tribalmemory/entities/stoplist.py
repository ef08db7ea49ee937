"""Capitalised words that name nothing on their own."""

WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
WEEKDAYS |= {day + "s" for day in WEEKDAYS}  # on Fridays
MONTHS = {
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "mon",
    "tue",
    "wed",
    "thu",
    "fri",
    "sat",
    "sun",
}
COMMON = {
    "the",
    "a",
    "an",
    "and",
    "or",
    "but",
    "not",
    "no",
    "yes",
    "all",
    "any",
    "both",
    "each",
    "every",
    "some",
    "this",
    "that",
    "these",
    "those",
    "it",
    "its",
    "we",
    "our",
    "they",
    "their",
    "he",
    "she",
    "his",
    "her",
    "i",
    "my",
    "you",
    "your",
    "also",
    "only",
    "then",
    "now",
    "still",
    "after",
    "before",
    "since",
    "until",
    "when",
    "while",
    "why",
    "what",
    "who",
    "how",
    "where",
    "if",
    "so",
    "as",
    "at",
    "by",
    "for",
    "from",
    "in",
    "into",
    "of",
    "on",
    "to",
    "with",
    "fix",
    "fixed",
    "plan",
    "decided",
    "confirmed",
    "open",
    "question",
    "lesson",
    "alert",
    "logs",
    "repro",
    "proposal",
    "note",
    "tip",
    "done",
    "closing",
    "found",
    "added",
    "checked",
    "ok",
    "first",
    "second",
    "third",
    "new",
    "old",
    "next",
    "last",
    "one",
    "two",
    "three",
    "today",
    "tomorrow",
    "yesterday",
    "morning",
    "evening",
    "night",
    "weekend",
    "week",
    "release",
    "breaking",
    "design",
    "team",
    "engineering",
    "product",
    "finance",
    "support",
    "unreleased",
    "changelog",
    "unity",
    "art",
    "memory",
    "build",
    "tests",
    "test",
}
ACRONYMS = set(
    "qa ci api ui id pr prs utc gmt eta tbd todo faq json yaml csv html http https sql url sdk "
    "cli os".split()
)
"""Generic acronyms, also written in small letters: a word that names nothing, but no English
word either, so no compound opens with one (``api-gateway`` is a name, ``per-site`` is not)."""
COMMON |= ACRONYMS
FUNCTION = set(
    "another other others many much more most less least few several same such own none "
    "nobody nothing everyone everybody everything someone somebody something anyone anybody "
    "anything here there too very just even yet again once per via vs instead however maybe "
    "perhaps please thanks hence thus otherwise meanwhile can could would should must "
    "might shall do does did is are was were be been has have had let".split()
)
"""English function words: determiners, pronouns, auxiliaries, connectives."""
BUILT_IN_TYPES = set(
    "vec vecs string strings str dictionary dictionaries variant nodepath stringname array "
    "arrays".split()
)
"""Types built into a language (Rust's ``Vec``, ``String``; Godot's ``Dictionary``): every
program's, no one thing, named alone (a library's classes are identifiers; ``Style
Dictionary`` is a product)."""
UNITS = set(
    "hz khz mhz ghz mah kwh mwh gwh twh dbm dbfs dbu kb mb gb tb pb kib mib gib tib kbps mbps "
    "gbps tbps co2e tco2e kgco2e mtco2e".split()
)
"""Units written with a capital (``MHz``, ``mAh``, ``Mbps``, ``dBFS``, ``tCO2e``): a measure,
no thing."""
KEYS = set("tab esc escape enter shift ctrl alt backspace spacebar".split())
"""Keys of a keyboard (``press Tab``, ``Escape closes the dialog``): a key, no thing."""
HOLIDAYS = set("christmas easter thanksgiving halloween diwali ramadan eid hanukkah".split())
"""Holidays (``Christmas``, ``Easter Monday``): a time, no thing."""
HALVES = {"wi", "fi"}
"""The halves of ``Wi-Fi``, which the names' rule meets apart."""
HONORIFICS = set("mr mrs ms dr prof sir".split())
"""Titles before a name (``Dr. Reyes``): the name is the person's."""
LITERALS = set("true false null nil none undefined nan inf infinity".split())
"""Values every language writes the same way (``True``, ``NaN``, ``Inf``): no one thing."""
GROUPS = frozenset(
    "user users customer customers client clients everyone everybody someone somebody nobody "
    "owner owners reviewer reviewers maintainer maintainers contributor contributors author "
    "authors admin admins manager managers lead leads founder founders director directors "
    "staff sales legal security finance support marketing design product engineering ops "
    "devops infra infrastructure platform data analytics research qa compliance audit "
    "auditor auditors procurement partner partners vendor vendors stakeholder stakeholders "
    "management leadership exec execs hr oncall backend frontend mobile web android ios "
    "engine tools art audio producer producers designer designers developer developers dev "
    "devs engineer engineers team teams org company community upstream downstream reporter "
    "requester approver approvers bot bots agent agents assistant ai model".split()
)
"""People named by their role or group (``User prefers``, ``Legal wants``, ``Security
asked``): said of people, but no one person (the guideline: roles and teams are no entities)."""

POD_STATES = set(
    "oomkilled crashloopbackoff imagepullbackoff errimagepull containercreating "
    "createcontainerconfigerror".split()
)
"""States of a Kubernetes pod (``OOMKilled``, ``CrashLoopBackOff``): values, not names."""

STOP = (
    WEEKDAYS
    | MONTHS
    | HOLIDAYS
    | COMMON
    | FUNCTION
    | LITERALS
    | HONORIFICS
    | UNITS
    | KEYS
    | HALVES
    | POD_STATES
)
RANKS = frozenset(
    "tier level phase stage step round sprint grade patch annex appendix table class wave "
    "section chapter schedule rev revision page item clause".split()
)
"""Words a number ranks (``Tier 2``, ``Phase 3``): a rank, no name, before its number."""
NATIONALITY_ADJECTIVES = frozenset(
    "british irish scottish english spanish danish polish finnish swedish turkish kurdish "
    "flemish cornish jewish yiddish chinese japanese portuguese vietnamese burmese maltese "
    "lebanese taiwanese nepalese sudanese congolese senegalese javanese cantonese balinese "
    "sinhalese guyanese faroese milanese genovese viennese".split()
)
"""Languages and nationalities ending in -ish or -ese (``Polish``, ``English``,
``Portuguese``): ordinary words at a run's edge; a list, since first names end so too
(``Hamish``, ``Manish``)."""
LANGUAGES_AND_COUNTRIES = frozenset(
    # languages and peoples whose adjective does not end in -ish or -ese
    "german french dutch italian russian arabic hindi urdu bengali punjabi tamil telugu "
    "marathi gujarati kannada malayalam persian farsi hebrew greek korean thai indonesian "
    "malay tagalog filipino swahili yoruba igbo hausa amharic zulu xhosa afrikaans somali "
    "ukrainian czech slovak slovenian croatian serbian bosnian bulgarian romanian hungarian "
    "estonian latvian lithuanian catalan basque galician welsh icelandic norwegian mongolian "
    "nepali sinhala khmer lao georgian armenian azerbaijani kazakh uzbek pashto maori "
    "hawaiian esperanto cantonese mandarin brazilian mexican argentinian chilean colombian "
    "peruvian pakistani egyptian nigerian kenyan ethiopian moroccan iranian iraqi syrian "
    "israeli philippine malaysian singaporean belgian austrian "
    # countries
    "afghanistan albania algeria argentina armenia australia austria azerbaijan bangladesh "
    "belarus belgium bolivia brazil bulgaria cambodia cameroon canada chile china colombia "
    "croatia cuba cyprus czechia denmark ecuador egypt estonia ethiopia finland france "
    "georgia germany ghana greece guatemala honduras hungary iceland india indonesia iran "
    "iraq ireland israel italy jamaica japan jordan kazakhstan kenya korea kuwait latvia "
    "lebanon libya lithuania luxembourg malaysia malta mexico moldova mongolia morocco "
    "mozambique myanmar nepal netherlands nicaragua nigeria norway pakistan panama paraguay "
    "peru philippines poland portugal qatar romania russia rwanda senegal serbia singapore "
    "slovakia slovenia somalia spain sudan sweden switzerland syria taiwan tanzania thailand "
    "tunisia turkey uganda ukraine uruguay uzbekistan venezuela vietnam yemen zambia "
    "zimbabwe".split()
)
"""A language, a people or a country named alone (``Yoruba``, ``German``, ``Brazil``): said
of customers, data or places that are not the team's own, no thing of the project's (a
product or a company named after one keeps it: ``Swiss Re``)."""
ALONE = LANGUAGES_AND_COUNTRIES | BUILT_IN_TYPES
STREETS = frozenset("road street lane avenue drive cottage crescent terrace close".split())
"""The last word of an address (``Mill Lane``, ``Rose Cottage``): a customer's address written
as an example, no thing of the project's."""
GENERIC_WITH_DIGITS = frozenset(
    "I2C I2S MP3 MP4 M4A H264 H265 AV1 VP8 VP9 IPV4 IPV6 UTF8 UTF16 UTF32 SHA1 SHA256 SHA384 "
    "SHA512 MD5 BASE64 X509 HTTP2 HTTP3 L2 L3 L4 L7 2FA 3G 4G 5G P2P E2E DHCPV6 ICMPV6 NAT64 "
    "DNS64 OSPFV3 SNMPV3 10G 25G 40G 100G 400G L0 L1 RS232 RS422 RS485 "
    "O2 O3 CO2 N2 H2 H2O H2S CH4 NH3 NO2 SO2 N2O PCO2 PO2 CO2E".split()
)
"""Generic acronyms with a digit (buses and serial lines, codecs, protocols, hash functions,
encodings, levels and layers, chemical formulas: ``I2C``, ``RS-485``, ``UTF-16``, ``SHA-256``,
``L1``, ``CO2``), in capitals
without a hyphen: a kind of thing, while other acronyms with a digit name one (``PS5``)."""
"""Words that name no one thing when a name is that word alone."""

GENERIC_ACRONYMS = frozenset(
    # safety integrity levels' schemes
    "ASIL DAL SIL "
    # software process, roles of code and of work
    "API ABI SDK NDK CLI GUI TUI IDE REPL LSP DAP VCS SCM CI CD CICD PR MR CR RC GA LTS LTR EOL "
    "EOS QA UAT UI UX DX OSS FOSS TDD BDD DDD DRY KISS YAGNI SOLID OOP FP MVC MVVM MVI DI IOC "
    "SPA PWA SSR SSG ISR CSR DOM CRUD REST RPC SOAP GQL DSL AST ORM DTO DAO POC MVP ADR RFC "
    "PRD ERD SOP RACI WIP TODO FIXME README FAQ HOWTO LGTM PTAL DRI IC "
    # hardware and the machine
    "CPU GPU TPU NPU VRAM RAM ROM SSD HDD NVME USB HDMI PCI PCIE FPGA ASIC MCU SOC PCB IO IOT "
    "NAS SAN RAID LVM VM VMS OS JVM CLR JIT AOT GC IPC MMU NUMA SIMD AVX ISA ARM RISC CISC "
    "TTY PTY CWD PWD EOF OOM STDIN STDOUT STDERR BIOS UEFI "
    # networking and protocols every stack speaks
    "LAN WAN WLAN VLAN SSID VPN NAT DHCP DNS ARP BGP MTU RTT TTL SYN ACK NACK FIN RST TCP UDP IP "
    "ICMP HTTP HTTPS WS WSS SSE SMTP IMAP POP FTP SFTP FTPS SCP SSH RDP VNC SNMP NTP NFS SMB "
    "CIFS CDN LB URL URI URN FQDN CIDR ASN ISP SNI ALPN HSTS CORS CSP SRI MX CNAME TXT AAAA "
    "PTR NS SOA SRV NXDOMAIN HA DR BCP SPOF RPS QPS TPS IOPS "
    # formats and encodings
    "JSON JSONL NDJSON YAML TOML INI XML CSV TSV HTML XHTML CSS SCSS JS TS JSX TSX SQL PDF "
    "PNG JPG JPEG GIF SVG WEBP BMP TIFF ZIP TAR GZ MD MIME UTF ASCII ANSI UUID GUID ULID CRLF "
    "LF BOM RGB RGBA HEX DPI PPI FPS HDR APK AAB IPA EXE DLL "
    # security and identity, generic
    "XSS CSRF SSRF RCE SQLI IDOR XXE CVE CWE SAST DAST SCA SBOM SIEM EDR XDR IDS IPS DLP PAM "
    "MFA TFA SSO OTP TOTP HOTP PIN JWT HMAC SHA AES RSA ECDSA TLS SSL MTLS PKI CA CRL OCSP HSM "
    "RBAC ABAC ACL PII PHI IOC TTP APT "
    # data and machine learning
    "ETL ELT CDC DAG DDL DML DB DBA BI DW EDW OLAP OLTP ODS SCD PK FK CTE UDF KV LRU FIFO LIFO "
    "AI ML LLM NLP OCR RAG GPT GIS XYZ "
    # operations and reliability
    "SLA SLO SLI MTTR MTTD MTBF RTO RPO RCA PIR SRE SWE SDE SRS "
    # Kubernetes kinds written as acronyms, nouns
    "PDB HPA VPA CRD PV PVC SA CNI CSI CRI "
    # web and mobile metrics, app stores
    "SEO SEM ASO CTA CTR CPC CPM CPA LCP CLS FID INP TTFB FCP OTA IAP ANR DAU WAU MAU "
    # games
    "NPC HUD LOD VFX SFX DLC MMO RPG PVP PVE XP HP DPS AOE QTE UGC GDD AAA FOV PBR "
    # business, finance, compliance trade
    "CEO CTO CFO COO CIO CISO CPO CRO CMO VP SVP EVP GM PM PO EM TL HR IT OPS BA CS CSM AE "
    "SDR BDR AM TAM SE KPI OKR ROI PNL ARR MRR NRR GRR ACV TCV LTV CAC CSAT NPS CES SMB SME "
    "ICP GTM RFP RFQ RFI SOW MSA NDA DPA TOS EULA SKU UPC EAN GTIN VAT GST EIN TIN SSN DOB "
    "AP AR GL FX CRM ERP CMS HRIS SAAS PAAS IAAS B2B B2C KYC KYB AML CFT MLRO DPO QSA CDE SAR "
    "PEP EDD CDD STR PAN CVV BIN MCC POS PSP IBAN BIC "
    # licences
    "MIT BSD GPL LGPL AGPL MPL "
    # message types used as nouns (a standard's values)
    "ADT ORU ORM ACK "
    # time: zones, deadlines, periods
    "UTC GMT CET CEST EET EEST WET WEST BST IST EST EDT CST CDT MST MDT PST PDT AEST AEDT JST "
    "DST KST SGT HKT NZST NZDT AWST AWDT ACST ACDT AKST AKDT HST ETA ETD EOD EOW EOM EOQ EOY YTD "
    "QTD MTD YOY MOM QOQ ASAP "
    # chat and notes
    "FYI TBD TBC TBA AFAIK IIRC IMO IMHO TLDR TBH OOO PTO WFH AOB NB PS AKA DIY RSVP ETC OK "
    "IE EG VS NA QBR AMA "
    # currencies (values)
    "USD EUR GBP JPY CHF CAD AUD NZD SEK NOK DKK PLN CZK HUF INR CNY BRL MXN ZAR SGD HKD "
    "TRY KZT UAH IDR VND CLP PEN ARS COP THB MYR KRW TWD ILS AED EGP NGN KES RUB RON BGN ISK "
    # regions and countries (no place of the team's)
    "US USA UK EU EEA UAE APAC EMEA LATAM AMER ANZ DACH "
    # electronics and embedded: buses, peripherals, power, parts, packages
    "ADC DAC PWM GPIO UART USART LPUART SPI QSPI OSPI I2S SDIO MMC EMMC JTAG SWD SWO DMA NVIC "
    "RTC RTOS HAL BSP PMIC LDO SMPS PSU VCC VDD VSS GND VBAT VIN VOUT VREF BOR POR LED LCD OLED "
    "TFT EMC EMI ESD PLL HSE LSE HSI LSI TCXO XTAL OSC MOSFET FET BJT PCBA DUT HIL SIL SOM EVK "
    "NVM EEPROM FLASH NOR NAND SRAM DRAM SDRAM PHY BLE NFC RFID LPWAN GNSS GPS IMU BMS MPPT FOTA "
    "FUOTA DFU FW HW SW LIN SMD QFN BGA QFP SOIC USON DFN LGA TSSOP TIM LPTIM RCC EXTI IWDG WWDG "
    # audio, speech and language
    "ASR TTS STT LID VAD WER CER BLEU ROUGE METEOR MOS SNR PESQ FLAC WAV OGG AAC PCM MIDI MFCC "
    "STFT FFT DSP IVR "
    # machine learning and statistics
    "ANN KNN CNN RNN LSTM GRU MLP GAN VAE RL RLHF SFT PEFT SGD LR EMA KL MSE MAE RMSE AUC ROC "
    "PCA SVD SVM OOD IID SOTA NER LSH HNSW IVF TFIDF BPE MLM CTC CRF HMM GMM MCMC "
    # web, front end, packaging
    "ESM CJS UMD IIFE CRDT WASM WASI AJAX JSONP RSS ATOM MDX SASS HMR BFF RUM CWV "
    # operating systems and processes
    "PID PPID UID GID TID FD IRQ NIC VSZ MSRV LTO PGO ELF MBR FS ENV SMP VCPU RDMA "
    # everyday technology, standards bodies written for their formats (``ISO`` timestamps)
    "SMS MMS QR ATM SIM ESIM WIFI LTE GSM ISO "
    # medicine and care
    "EHR EMR ICU MRN NPI BAA ECG EKG EEG MRI BMI OTC "
    # network engineering and telecoms: routing, fabrics, access, operations
    "IBGP EBGP OSPF ISIS EIGRP RIP EVPN VXLAN VTEP MPLS LDP VRF VRRP HSRP LACP LLDP STP RSTP "
    "MSTP MLAG ECMP BFD QOS DSCP COS RPKI ROA RTR IRR VRP NLRI AFI SAFI RIB FIB LPM BNG BRAS "
    "CPE ONT OLT PON GPON XGSPON DWDM CWDM OTDR SFP QSFP LOA LOS NOC POP IXP PNI CDN DDOS RTBH "
    "ZTP ISSU NETCONF YANG GRE IPSEC IKE PPPOE IPOE DHCPV6 SLAAC NDP RA PD CGNAT NAT64 DNS64 "
    "SDN SDWAN WAF CRC FEC OSS BSS "
    # the lab and genomics: assays, data and formats
    "DNA RNA CDNA MRNA PCR QPCR NGS WGS WES SNP SNV CNV INDEL UMI QC LIMS ELN HPC FASTQ FASTA "
    "BAM SAM CRAM VCF GVCF BCF BED GFF GTF MAPQ BQSR PON CI "
    # insurance, law and finance: the trade's own terms
    "FNOL MTA NCD LOB TPA MGA IBNR UW SIU DSAR SAR PAS LLC LTD INC PLC GMBH APR AUM NAV EBITDA "
    "WSDL "
    # utilities and industrial control (OT): grid systems, field devices, protocols' parts
    "SCADA ADMS EMS OMS OT ICS RTU IED PLC HMI DCS FEP SOE AOR PMU DER BESS ETR ESP "
    "CROB IIN GOOSE SCL ICD CID FCDA RCB BRCB URCB SAIDI SAIFI CAIDI RSAW HV MV LV "
    # video and streaming: codecs, packaging, playback, quality
    "HEVC AVC VVC CMAF HLS DASH MPD VOD AVOD SVOD FAST ABR GOP CRF CBR VBR VMAF PSNR SSIM EME "
    "CDM DRM CMCD SPC CKC VTT SRT SCC TTML QOE QOS OTT CTV MCR ECC "
    # schools and learning
    "SIS LMS VPAT "
    # freight and logistics
    "POD WMS TMS EDI OTIF BOL LTL FTL "
    # networks and identity, generic
    "DMZ LTSC JWKS JWK IDP "
    # units
    "KB MB GB TB PB KIB MIB GIB TIB MS NS KBPS MBPS GBPS RPM DPI PX PT REM VH VW CM MM KM KG "
    "LB LBS OZ FT MPH KPH KMH SEC MIN HR HRS ".split()
)
CAPITALISED_WORDS = frozenset(
    # environments by a common word, HTTP methods, SQL words, states, emphasis
    "PROD DEV STG STAGING LOCAL TEST GET POST PUT PATCH DELETE HEAD OPTIONS SELECT INSERT "
    "UPDATE JOIN WHERE FROM ORDER GROUP BY LIMIT CREATE DROP ALTER TABLE INDEX VIEW ON OFF "
    "YES NO TRUE FALSE NULL NONE ALL ANY NOT AND OR IF THE NEW OLD DONE FAIL FAILED PASS "
    "PASSED LIVE DOWN UP READ WRITE NOTE URGENT BLOCKER NEVER ALWAYS MUST SHOULD MAY ONLY DO "
    "DONT STOP WAIT HELP KEEP SET VALUES INTO DISTINCT HAVING UNION RETURNING CONFLICT "
    "NOWAIT SKIP LOCKED INTERVAL DAY DAYS HOUR HOURS MONTH YEAR OVER PARTITION WINDOW ROWS "
    "RANGE CASE WHEN THEN ELSE END AS IN IS LIKE EXISTS BETWEEN WITH USING MERGE GRANT "
    "REVOKE BEGIN COMMIT ROLLBACK TRUNCATE CASCADE".split()
)
"""Words written in capitals as syntax, a state or for emphasis (``SELECT``, ``DROP``, ``GET``,
``NOT``): a word in capitals beside one is syntax too (``DROP ROLE``, ``INSERT IGNORE``)."""
GENERIC_ACRONYMS |= CAPITALISED_WORDS
"""Acronyms (and words written in capitals) every team uses for a kind of thing, not one
thing: processes, roles, hardware, protocols and formats every stack speaks, generic security
and data terms, business and compliance terms, time zones, currencies, regions, units, and
words in capitals for emphasis or syntax. Written from general knowledge of technical and
business English, upper case (``MTLS`` for ``mTLS``); the trades' sections (networking, the
lab, insurance, utilities' control systems, video streaming, schools, freight) were added after
reading the errors of a labelled stream of that trade, so they are no held-out check of the
list (docs/entities.md)."""
