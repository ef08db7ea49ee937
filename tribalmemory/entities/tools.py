"""Third-party developer tools, libraries, databases, CLIs, services and platforms that are
written in small letters (``kubectl``, ``pgbouncer``, ``vitest``): a gazetteer written from
general knowledge of the ecosystems (Python, JS/TS, Go, Rust, JVM, Ruby, PHP, .NET, C/C++,
mobile, data and ML, infrastructure and cloud CLIs, databases, observability, security, build
tools, game development, robotics, SaaS), not from any labelled corpus; a second batch of
about 70 (web servers, schedulers, Kubernetes add-ons, bioinformatics, system and docs tools:
``nginx``, ``slurm``, ``samtools``, ``typedoc``) was added after the labelled streams' errors
had been read, so the tuning streams' recall overstates what it adds; a third handful
(Fortran compilers, ``xarray``, ``imgix``) after the eighth blind batch's.

:data:`TOOLS` leaves out names that English uses for something else (a dictionary has them in
another, everyday sense: ``black``, ``flask``, ``celery``, ``helm``, ``spark``) and formats or
protocols (``json``, ``grpc``); those in :data:`AMBIGUOUS_TOOLS` are read as a tool only where
prose cannot mean the word (beside a release: ``flask 2.3``). :func:`tool_spans` finds them
in prose."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.words import english_words

TOOLS = frozenset(
    """
    pytest pylint flake8 mypy pyright ruff isort autopep8 yapf pipenv pipx conda miniconda
    micromamba virtualenv venv pyenv setuptools hatchling pdm django fastapi starlette uvicorn
    gunicorn hypercorn dramatiq huey sqlalchemy alembic psycopg psycopg2 asyncpg aiohttp httpx
    urllib3 pydantic numpy scipy matplotlib seaborn plotly dask pyspark pyarrow sklearn
    scikit-learn xgboost lightgbm catboost pytorch torchvision torchaudio tensorflow keras jax
    langchain langgraph llamaindex llama-index openai litellm nltk gensim jupyter jupyterlab
    ipython ipykernel nbconvert streamlit gradio boto3 botocore moto pytest-asyncio
    pytest-xdist pytest-cov pytest-mock pytest-django pytest-benchmark scrapy beautifulsoup bs4
    lxml jinja jinja2 opencv pygame kivy tkinter pyqt pyqt5 pyqt6 pyside pyside6 wxpython
    mkdocs pdoc docutils pyinstaller nuitka cython pypy mypyc numba cupy pymongo aioredis
    redis-py kombu confluent-kafka structlog loguru sentry-sdk typer argparse tqdm pyyaml ujson
    orjson msgpack protobuf grpcio sanic pyodide pipdeptree pip-tools pip-compile deptry
    dagster mlflow wandb optuna onnx onnxruntime openpyxl xlsxwriter reportlab weasyprint pypdf
    pypdf2 pdfplumber pytesseract paramiko ansible pytz dateutil gettext mimesis freezegun
    vcrpy memray py-spy scalene pyinstrument cprofile sqlmodel odmantic mongoengine
    djangorestframework whitenoise gevent eventlet greenlet anyio asyncio uvloop pyppeteer
    robotframework chromadb qdrant weaviate faiss milvus pgvector sentence-transformers vllm
    ollama llama.cpp diffusers peft deepspeed tensorrt jaxlib statsmodels sympy networkx
    geopandas rasterio gdal pyproj pandera sqlfluff sqlglot duckdb meltano airbyte fivetran
    pyflakes pycodestyle pydocstyle pyupgrade autoflake codespell pip-audit semgrep commitizen
    bumpversion bump2version towncrier setuptools-scm maturin pybind11 nanobind cffi ctypes
    pymysql mysqlclient aiokafka kafka-python celerybeat kedro kubeflow sagemaker tensorboard
    horovod huggingface transformers.js pytest-bdd testinfra npm npx pnpm deno nodejs node.js
    nvm fnm corepack webpack vite vitest esbuild swc turbopack turborepo lerna tsc
    ts-node tsup tsx jsdom msw sinon supertest webdriverio appium eslint tslint stylelint
    oxlint lint-staged commitlint semantic-release preact vue vuejs vue.js vuex pinia nuxt
    nuxtjs nextjs next.js sveltekit solidjs angularjs emberjs jquery lodash ramda rxjs mobx
    zustand jotai xstate immer axios superagent urql trpc prisma typeorm sequelize knex kysely
    mikro-orm zod joi ajv tailwindcss postcss autoprefixer scss styled-components shadcn antd
    bulma chartjs chart.js d3.js three.js threejs pixi.js babylon.js tauri cordova react-native
    nestjs expressjs koa fastify hono eleventy jekyll docusaurus vuepress vitepress nodemon pm2
    socket.io dayjs date-fns luxon dotenv cross-env rimraf chokidar yargs pino nextauth
    next-auth auth0 firebase supabase appwrite pocketbase hasura strapi wordpress drupal joomla
    magento shopify woocommerce commercetools bigcommerce typescript javascript coffeescript
    purescript rescript clojurescript emscripten wasmtime wasmer wasm-pack wasm-bindgen
    npm-check-updates dependabot snyk verdaccio bugsnag logrocket posthog mixpanel hotjar
    launchdarkly growthbook flagsmith statsig optimizely algolia meilisearch typesense
    elasticsearch opensearch kibana logstash filebeat metricbeat fluentd fluent-bit fluentbit
    graylog splunk sumologic react-query tanstack swr react-router react-dom create-react-app
    craco vue-router vue-cli angular-cli browserify uglifyjs webpack-dev-server golang gofmt
    gofumpt goimports golangci-lint staticcheck govulncheck gopls dlv gorm sqlx sqlc pgx
    zerolog logrus gomock gomega goreleaser templ protoc grpc-go grpc-gateway bazel bazelisk
    traefik etcd etcdctl terraform terragrunt tflint tfsec terratest pulumi crossplane opentofu
    cdktf checkov infracost atlantis rustc rustup rustfmt clippy tokio serde actix actix-web
    axum reqwest sea-orm thiserror nextest cargo-nextest miri pyo3 bindgen cbindgen wgpu mvn
    gradle gradlew sbt openjdk graalvm kotlin kotlinc ktlint detekt checkstyle pmd spotbugs
    findbugs junit junit5 testng mockito mockk assertj hamcrest wiremock testcontainers jacoco
    lombok mybatis jooq liquibase gson guice koin ktor micronaut quarkus vertx vert.x
    dropwizard netty log4j log4j2 logback slf4j jmeter gatling jenkins scala akka pekko flink
    kafka hadoop hdfs trino hbase jshell jlink jpackage proguard kotlinx okhttp moshi jib
    spring-boot intellij netbeans springboot rubocop rspec minitest sidekiq resque sinatra
    hanami rbenv rvm irb activerecord actioncable haml nokogiri cocoapods chruby standardrb
    solargraph kamal php laravel symfony phpunit phpstan codeigniter cakephp yii xdebug php-fpm
    phpcs phpmd wp-cli dotnet nuget msbuild xunit nunit mstest moq blazor xamarin aspnet
    asp.net signalr serilog nlog automapper mediatr hangfire fluentvalidation resharper csharp
    fsharp powershell pwsh nswag roslyn ilspy dotpeek gcc llvm lldb gdb cmake autoconf automake
    libtool pkg-config buck2 scons vcpkg valgrind clang-tidy clang-format clangd cppcheck
    ccache sccache distcc lld gtest googletest catch2 doctest flatbuffers capnproto zeromq zmq
    libuv libcurl wget openssl libssl boringssl libressl zlib lz4 zstd gzip bzip2 brotli sqlite
    sqlite3 ffmpeg gstreamer imagemagick opengl vulkan directx sdl2 glfw glew imgui openmp cuda
    nvcc rocm opencl spdlog nlohmann rapidjson msvc mingw cygwin emacs neovim nvim vscode tmux
    zsh oh-my-zsh strace ltrace gprof objdump readelf ldd patchelf upx perl lua luajit ocaml
    haskell ghc cabal-install clojure leiningen erlang rebar3 elixir-ls iex fortran matlab
    cobol vyper solc xcode xcodebuild xcrun simctl swiftui uikit swiftlint swiftformat
    testflight adb logcat robolectric xctest xcuitest crashlytics onesignal revenuecat codepush
    lottie bitrise codemagic appcenter jetpack-compose androidx kmm databricks bigquery dbt
    dbt-core dbt-cloud dataform metabase redash grafana lightdash redpanda rabbitmq
    activemq debezium hightouch rudderstack hudi clickhouse dremio colab dvc lakefs
    sqlmesh datafold cubejs fullstory postgres postgresql psql pgbouncer pgpool patroni citus
    timescaledb cockroachdb yugabyte yugabytedb mysql mariadb percona vitess planetscale
    litestream mongodb mongo mongosh redis valkey keydb memcached couchdb couchbase scylla
    scylladb dynamodb cosmosdb firestore neo4j arangodb dgraph janusgraph influxdb
    victoriametrics thanos mimir loki zipkin solr lucene rocksdb leveldb lmdb foundationdb tidb
    mssql sqlserver db2 teradata greenplum vertica memsql singlestore questdb surrealdb edgedb
    faunadb pgadmin dbeaver datagrip sqitch postgis pgbackrest pghero pgbadger pglogical
    redis-cli mysqldump pgcli mycli docker dockerd docker-compose podman buildah buildkit
    skopeo containerd cri-o runc crun kubernetes k8s k3s k3d minikube microk8s kubectl kubeadm
    kubelet kube-proxy kubectx kubens k9s helmfile kustomize skaffold argocd argo-cd
    argo-workflows argo-rollouts fluxcd tekton buildkite circleci teamcity gitlab github
    bitbucket gitea gogs sourcehut gerrit phabricator jira trello pagerduty opsgenie statuspage
    incident.io rootly firehydrant victorops datadog newrelic dynatrace appdynamics lightstep
    alertmanager pushgateway promtail opentelemetry otel otelcol rollbar nagios
    zabbix icinga checkmk uptimerobot pingdom statsd telegraf collectd cadvisor
    kube-state-metrics pyroscope parca istio istioctl linkerd openresty haproxy httpd lighttpd
    cloudflare cloudflared fastly akamai cloudfront route53 vercel netlify heroku fly.io flyctl
    digitalocean doctl linode vultr hetzner scaleway aws awscli aws-cli eksctl gcloud gsutil
    azcli cloudformation cdk zappa ansible-playbook saltstack cloud-init virtualbox vmware qemu
    kvm libvirt proxmox gvisor gpg gnupg openssh autossh sshuttle wireguard tailscale headscale
    zerotier openvpn strongswan iptables nftables ufw firewalld fail2ban certbot cert-manager
    letsencrypt acme.sh step-ca cfssl keycloak okta oauth2-proxy authelia authentik zitadel
    kratos spicedb openfga kyverno trivy grype syft anchore sonarqube sonarcloud codeql
    gitleaks trufflehog detect-secrets osv-scanner nmap masscan nikto sqlmap metasploit
    wireshark tcpdump tshark mitmproxy hashcat gobuster ffuf subfinder nessus openvas qualys
    wazuh osquery suricata zeek yara clamav crowdstrike sentinelone sigstore in-toto kube-bench
    kube-hunter kubescape terrascan scoutsuite steampipe falco gh glab jq yq fzf ripgrep eza
    htop btop ncdu rsync rclone restic borgbackup velero kopia s3cmd awk grep xargs crontab
    systemd systemctl journalctl launchd launchctl supervisord runit apt-get dnf pacman flatpak
    nixos nixpkgs asdf direnv chezmoi ngrok localtunnel mkcert httpie netcat socat nslookup
    traceroute iperf iperf3 vegeta k6 toxiproxy chaos-mesh pumba pycharm webstorm goland
    clion phpstorm twilio sendgrid mailgun mailchimp braintree adyen paypal klarna
    razorpay chargebee recurly zuora avalara taxjar mattermost rocketchat zulip jitsi webex
    whatsapp godot fmod wwise steamworks steamcmd renderdoc nsight physx box2d aseprite ldtk
    raylib sfml monogame libgdx defold love2d pico-8 gamemaker rpgmaker glsl hlsl spir-v
    shadertoy ros ros2 rviz rviz2 moveit moveit2 colcon rosbag rosbag2 roslaunch urdf xacro
    mujoco pybullet webots autoware nav2 ompl orocos micro-ros fastdds cyclonedds zenoh
    ardupilot px4 mavlink qgroundcontrol platformio arduino esp-idf freertos openocd openemr
    hubspot salesforce pipedrive airtable zapier n8n appsmith budibase webflow figma calendly
    docusign toggl quickbooks xero freshbooks zendesk freshdesk helpscout gorgias kustomer sqs
    sns ecr eks ec2 fargate cloudwatch cloudtrail guardduty elasticache cognito appsync
    eventbridge quicksight dataproc pubsub bigtable gke gcr aks cosmos-db firefox webkit
    nginx slurm unittest karpenter keda coredns kaniko opa argo prometheus luigi nextflow
    snakemake cromwell bwa samtools bcftools gatk fastqc multiqc kallisto minimap2 bowtie2
    htslib iotop md5sum sha256sum lsof netstat conntrack ethtool ipmitool smartctl logrotate
    uwsgi typedoc jsdoc pandoc markdownlint yamllint shellcheck hadolint kubeval kubeconform
    kubent gfortran ifort ifx crayftn xarray netcdf4 cftime imgix
    """.split()
)
"""Tools written in small letters whose name English does not use for anything else."""

AMBIGUOUS_TOOLS = frozenset(
    """
    attrs changesets crane picard salmon du df vale lychee stern lens octant pluto nats goldilocks
    black bundler make go cobra express flask celery spark hive helm airflow
    rust ruby swift
    dart julia elixir python java node poetry wheel twine hatch pip uv pandas polars requests
    marshmallow torch flax transformers anthropic papermill dash hypothesis coverage pre-commit
    pillow sphinx motor tenacity click rich wagtail pyramid tornado bottle falcon quart locust
    vulture radon prefect ray fabric invoke arrow pendulum babel faker tortoise peewee pony
    beanie graphene strawberry channels sentry trio websockets selenium playwright puppeteer
    splinter behave haystack pinecone whisper accelerate triton shapely altair safety bandit
    swig mamba anaconda yarn bun rollup parcel rush jest mocha chai jasmine karma cypress
    storybook prettier biome husky react svelte angular ember backbone underscore recoil apollo
    relay drizzle mongoose yup tailwind sass less emotion chakra radix bootstrap phaser
    electron capacitor ionic expo remix gatsby astro hugo forever cheerio nock enzyme
    nightwatch detox moment concurrently commander inquirer chalk winston bunyan morgan helmet
    passport lucia clerk convex sanity payload keystone ghost medusa elm renovate amplitude
    segment unleash vector delve gin echo fiber chi gorilla viper zap mockery ginkgo air wire
    buf ent gazelle caddy consul nomad vault packer vagrant tofu cargo warp rocket hyper diesel
    clap anyhow tracing rayon bevy maven ant hibernate jackson guava dagger hilt tomcat
    undertow groovy beam zookeeper presto impala druid pinot cassandra coroutines exposed
    retrofit spring eclipse jetpack gem rails capybara puma unicorn passenger rake pry devise
    sorbet brakeman slim erb danger hotwire turbo stimulus composer pest psalm rector artisan
    eloquent doctrine twig blade inertia maui polly dapper rider swashbuckle ninja meson mold
    boost curl gnu bash fish perf unity unreal flutter android espresso metro watchman glide
    coil realm room snowflake redshift athena kinesis vertex feast pulsar stitch census iceberg
    delta parquet orc looker tableau superset starburst nessie neon dragonfly cortex
    tempo jaeger oracle fauna barman kind tilt garden flux spinnaker drone
    concourse bamboo confluence asana linear notion slack honeycomb elk calico flannel weave
    envoy kong apache varnish squid wrangler render railway azure sam serverless chalice chef
    puppet salt firecracker kata boundary waypoint age hydra gatekeeper polaris popeye
    nuclei amass snort burp notary cursor sublime postman insomnia dig hey artillery siege
    litmus gremlin brew apt yum snap nix mise stow supervisor upstart tee sed cron borg stripe
    plaid square paddle zoom discord teams telegram signal blender maya houdini substance
    perforce plastic bullet jolt detour spine tiled construct gazebo catkin cartographer zephyr
    isaac carla epic lambda aurora bedrock glue amplify dataflow spanner bicep chrome safari
    gecko edge brave mode hex heap sigma evidence cube snowplow elementary soda intercom front
    bubble framer sketch loom harvest miro zed octave nim zig solidity lerna-lite tonic prost
    flit gulp grunt bower terser hardhat mosh sops mirth retool chromium tox nox daphne bokeh
    spacy pika folium redux contentful testify crossbeam flyway fastlane livewire clang abseil
    vim cilium flagger cosign prowler git homebrew
    """.split()
)
"""Tools whose name is also an English word (or a person's, a place's): a tool in prose only
where the word cannot be meant (beside a release)."""


_WORD = re.compile(
    r"(?<![\w.\-/@:$~\\=#<?])[a-z][a-z0-9]*(?:[.-][a-z0-9]+)*(?![\w/@\\=(-]|[.:][\w/])"
)
"""A whole word in small letters, with its dots and hyphens (``docker-compose``, ``next.js``):
not a part of a path, a link, a flag, a file name, markup or a code name (``/usr/bin/nginx``,
``redis://``, ``pytest.ini``, ``redis_url``, ``--redis``, ``numpy.array``, ``redis:7``,
``<?php``)."""
_PYTHON_PACKAGE = re.compile(r"py[a-z]{3,}")
"""A Python package by the prefix of its ecosystem (``pydicom``, ``pymodbus``, ``pythonnet``):
a tool where the word is no English one (not ``pyramid``)."""
_RELEASE = re.compile(r" \(?v?\d+\.\d+")
"""A release after a word (``flask 2.3``, ``celery v5.3.1``, ``devise (4.9.4)``): the word
names a product."""


_MEASURE = re.compile(r"[\d.]* ?([A-Za-z\u00b5\u00b0/%]{1,5})\b")
"""A short word after a number: a measure's unit unless an English word (``air 0.5 slpm``,
not ``flask 2.3 on``)."""


def _released(text: str, end: int) -> bool:
    """Whether a release follows ``end`` (:data:`_RELEASE`), not a measure (``air 0.5 slpm``)."""
    if not (release := _RELEASE.match(text, end)):
        return False
    unit = _MEASURE.match(text, release.end())
    return unit is None or unit.group(1).lower() in english_words()


def tool_spans(text: str) -> Iterable[tuple[int, int]]:
    """Where ``text`` names a tool of :data:`TOOLS` in small letters, a whole word (``switched
    to vitest``, ``pgbouncer in front``, ``pytest`` of `` `uv run pytest` ``), or one of
    :data:`AMBIGUOUS_TOOLS` beside a release (``flask 2.3``); not inside a path, a link or a
    code name."""
    for m in _WORD.finditer(text):
        word = m.group()
        if word in TOOLS or (word in AMBIGUOUS_TOOLS and _released(text, m.end())):
            yield m.span()
        elif _PYTHON_PACKAGE.fullmatch(word) and word not in english_words():
            yield m.span()


SAME_TOOL = (
    ("postgresql", "postgres", "pg"),
    ("kubernetes", "k8s"),
    ("mongodb", "mongo"),
    ("elasticsearch", "elastic-search"),
    ("javascript", "js"),
    ("typescript", "ts"),
    ("golang", "go"),
    ("sql-server", "mssql", "sqlserver"),
    ("macos", "mac", "osx"),
    ("homebrew", "brew"),
    ("addresssanitizer", "asan"),
    ("ripgrep", "rg"),
    ("kdb+", "kdb"),
    ("node.js", "node", "nodejs"),
)
"""Names one tool goes by, the usual first (canonical): asking for one counts the others."""


TOOL_COMMANDS = {
    "slurm": ("sbatch", "squeue", "sacct", "scontrol", "srun", "salloc", "scancel", "sinfo"),
    "lustre": ("lfs",),
    "nco": ("ncks", "ncrcat", "ncra", "ncea", "ncecat", "ncap2", "ncatted", "ncrename"),
    "bundler": ("bundle",),
}
"""The commands a system is driven by, each its own: asking for the system counts them
(``sacct`` and ``scontrol`` are Slurm's). Written after the tuning streams' misses had been
read (Slurm, Lustre, NCO and Bundler there), so they overstate what it adds."""


def same_tool(name: str) -> list[str]:
    """The other names of the tool ``name`` (canonical) goes by (:data:`SAME_TOOL`): ``postgres``
    and ``pg`` of ``postgresql``, or its commands (:data:`TOOL_COMMANDS`: ``sacct`` of
    ``slurm``); none for a name no tool of the tables goes by."""
    for names in SAME_TOOL:
        if name in names:
            return [n for n in names if n != name]
    return list(TOOL_COMMANDS.get(name, ()))
