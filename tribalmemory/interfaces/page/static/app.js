// The daemon's page: timeline of episodes, episode view with edits and causal links, spend
// and health.
// All data comes from the /v1 routes; the token (when the daemon has one) is kept in
// sessionStorage and sent as a bearer header, never in a URL.
import Arrow from "/page/vendor/timeline-arrows/arrow.js";
import { barOf, clean, colourOf, counted, escapeHtml, packLanes } from "/page/lanes.js";

const vis = window.vis;
const TOKEN_KEY = "tribalmemory.token";
const PAGE = 100; // the API's largest page of episodes
const ALL_PROJECTS = "*"; // a read's project that spans every project
const DAY = 86400 * 1000;
const $ = (id) => document.getElementById(id);

const state = { episodes: [], lanes: 0, laneOf: {}, timeline: null, arrows: [], open: null };
window.tribalPage = state; // for the browser test and for curious users

// -- the API -------------------------------------------------------------------------------

class AuthNeeded extends Error {}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) throw new AuthNeeded(data.error || "sign in");
  if (!response.ok) throw new Error(`${response.status}: ${data.error || response.statusText}`);
  return data;
}

// Every text the page shows goes through clean() (lanes.js), here or in el(): memories,
// titles, names and errors come from agents, and a bidirectional override or a control
// character in them is shown as its escape (\u202e), never obeyed.
function setText(node, text) {
  node.textContent = clean(text);
}

function setTip(node, text) {
  node.title = clean(text);
}

const textNode = (text) => document.createTextNode(clean(text));

function showError(err) {
  if (err instanceof AuthNeeded) return showLogin(err.message);
  setText($("error"), String(err.message || err));
}

// A user's action (an edit, a search, opening a view): the error line of an earlier one is
// cleared as it starts (a merge refused with 409 must not stay under a later success), and
// its own failure is shown there.
function act(work) {
  setText($("error"), "");
  return Promise.resolve().then(work).catch(showError);
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) setText(node, text);
  if (cls) node.className = cls;
  return node;
}

const usd = (v) => `$${Number(v || 0).toFixed(4)}`;
const day = (iso) => (iso ? iso.replace("T", " ").slice(0, 16) : "—");

// -- login ---------------------------------------------------------------------------------

function showLogin(message) {
  $("login").hidden = false;
  $("timeline-view").hidden = $("health-view").hidden = $("episode").hidden = $("entity").hidden = true;
  setText($("login-error"), sessionStorage.getItem(TOKEN_KEY) ? message : "");
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  start();
});

$("logout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});

// -- timeline ------------------------------------------------------------------------------

// The project picked ("*": all projects, what the page opens on), or null when this daemon's
// episode list takes no project.
const project = () => (state.hasProject ? $("f-project").value || ALL_PROJECTS : null);

function filters() {
  const query = new URLSearchParams();
  for (const [name, id] of [["tag", "f-tag"], ["outcome", "f-outcome"], ["participant", "f-participant"]]) {
    const value = $(id).value.trim();
    if (value) query.set(name, value);
  }
  if (project()) query.set("project", project());
  return query;
}

// The picker: every project that holds memories or episodes (GET /v1/projects), with its
// episode count; the one picked stays picked.
async function loadProjects() {
  if (!state.hasProject) return;
  const { projects } = await api("GET", "/v1/projects");
  state.projects = projects;
  const select = $("f-project");
  const current = select.value;
  const options = projects.map((p) => new Option(clean(`${p.name} (${counted(p.episodes, "episode")})`), p.name));
  select.replaceChildren(select.options[0], ...options);
  select.value = projects.some((p) => p.name === current) ? current : ALL_PROJECTS;
}

async function loadEpisodes() {
  const stats = await api("GET", "/v1/stats");
  const counts = stats.episodes;
  state.episodesOff = !counts;
  if (!counts) return [];
  const total = counts.active + counts.closed + counts.archived;
  const pages = Math.max(1, Math.ceil(total / PAGE));
  const query = filters();
  const answers = await Promise.all(
    Array.from({ length: pages }, (_, i) => {
      const q = new URLSearchParams(query);
      q.set("limit", PAGE);
      q.set("offset", i * PAGE);
      return api("GET", `/v1/episodes?${q}`);
    }),
  );
  const seen = new Map();
  for (const answer of answers) for (const ep of answer.episodes) seen.set(ep.id, ep);
  return [...seen.values()];
}

function fillChoices(select, values) {
  const current = select.value;
  const kept = select.options[0];
  select.replaceChildren(kept, ...[...values].sort().map((v) => new Option(clean(v), v)));
  select.value = values.has(current) ? current : "";
}

function render(episodes) {
  state.episodes = episodes;
  const bars = episodes.map((ep) => ({ id: ep.id, ...barOf(ep) }));
  const { lane, count } = packLanes(bars);
  state.lanes = count;
  state.laneOf = Object.fromEntries(lane);
  const groups = Array.from({ length: Math.max(count, 1) }, (_, i) => ({ id: i, content: `${i + 1}` }));
  const items = bars.map((bar, i) => {
    const ep = episodes[i];
    return {
      id: ep.id,
      group: lane.get(ep.id),
      start: bar.start,
      end: bar.end,
      content: escapeHtml(clean(ep.title)),
      title: escapeHtml(clean(`${ep.title}\n${ep.project} · ${ep.status} · ${ep.outcome || "outcome unknown"} · ${counted(ep.memory_count, "memory")}`)),
      className: colourOf(ep),
    };
  });
  const ids = new Set(episodes.map((e) => e.id));
  const links = episodes
    .filter((ep) => ep.parent_episode_id && ids.has(ep.parent_episode_id))
    .map((ep, i) => ({ id: i, id_item_1: ep.parent_episode_id, id_item_2: ep.id, title: "continued by" }));
  state.arrows = links.map((l) => [l.id_item_1, l.id_item_2]);
  if (state.timeline) state.timeline.destroy();
  delete document.body.dataset.drawn;
  // The window: all episodes (fit), or the latest year of them when they span more. Given as
  // start/end options instead, vis-timeline would wait for a range event (about a second)
  // before it shows the first draw.
  const latest = bars.length ? Math.max(...bars.map((b) => b.end)) : Date.now();
  const earliest = bars.length ? Math.min(...bars.map((b) => b.start)) : latest - 30 * DAY;
  state.marks = { render: performance.now() };
  state.timeline = new vis.Timeline($("timeline"), new vis.DataSet(items), new vis.DataSet(groups), {
    stack: false,
    zoomMin: 7 * DAY,
    zoomMax: 366 * DAY,
    orientation: { axis: "top" },
    groupHeightMode: "fixed",
    margin: { item: { vertical: 4 } },
    tooltip: { followMouse: true },
    onInitialDrawComplete: () => {
      state.drawnAt = performance.now(); // ms since navigation: benchmarks/page.py reads it
      const end = latest + DAY / 2;
      if (latest - earliest > 365 * DAY) state.timeline.setWindow(end - 365 * DAY, end, { animation: false });
      document.body.dataset.drawn = "true";
    },
  });
  state.marks.built = performance.now();
  new Arrow(state.timeline, links, { color: "#2271b1" });
  state.marks.arrows = performance.now();
  state.timeline.on("select", ({ items: chosen }) => chosen.length && act(() => openEpisode(chosen[0])));
  const tags = new Set(episodes.flatMap((e) => e.tags || []));
  fillChoices($("f-tag"), tags);
  const where = project() && project() !== ALL_PROJECTS ? ` of project ${project()}` : "";
  setText(
    $("summary-line"),
    state.episodesOff
      ? "Episodes are off on this daemon (episodes.enabled: false)."
      : `${counted(episodes.length, "episode")}${where} in ${counted(count, "lane")}, ${counted(links.length, "chain link")}`,
  );
}

// The zoom buttons: `days` wide around what is being looked at, so that it stays in view.
function zoom(days) {
  if (!state.timeline) return;
  const middle = zoomCentre();
  state.timeline.setWindow(middle - (days * DAY) / 2, middle + (days * DAY) / 2, { animation: false });
}

// The middle of the episode in view that is selected (a clicked bar, a search's match) or
// open, the one nearest the window's middle; with none, the window's middle.
function zoomCentre() {
  const shown = state.timeline.getWindow();
  const [from, to] = [shown.start.getTime(), shown.end.getTime()];
  const middle = (from + to) / 2;
  const picked = new Set([...state.timeline.getSelection(), state.open]);
  const centres = state.episodes
    .filter((ep) => picked.has(ep.id))
    .map(barOf)
    .filter((bar) => bar.end >= from && bar.start <= to)
    .map((bar) => (bar.start + bar.end) / 2);
  const distance = (t) => Math.abs(t - middle);
  return centres.reduce((best, t) => (distance(t) < distance(best) ? t : best), centres[0] ?? middle);
}

async function search() {
  const query = $("search").value.trim();
  const list = $("search-results");
  list.replaceChildren();
  if (!query) return;
  const body = { query, limit: 20 };
  if (project()) body.project = project(); // search runs within the project picked
  const found = await api("POST", "/v1/episodes/search", body);
  for (const ep of found.episodes) {
    const item = el("li", `${ep.title} (${ep.status}, ${day(ep.time_span.start)})`);
    item.dataset.id = ep.id;
    item.addEventListener("click", () => act(() => openEpisode(ep.id)));
    list.append(item);
  }
  if (!found.episodes.length) list.append(el("li", "no episode matches"));
  const shown = found.episodes.map((e) => e.id).filter((id) => id in state.laneOf);
  if (shown.length && state.timeline) {
    state.timeline.setSelection(shown);
    state.timeline.focus(shown, { animation: false });
  }
}

// -- episode view --------------------------------------------------------------------------

function structured(record) {
  const box = $("ep-structured");
  box.replaceChildren();
  if (!record) return;
  const add = (title, rows) => {
    if (!rows.length) return;
    box.append(el("h3", title));
    const list = el("ul");
    for (const row of rows) list.append(el("li", row));
    box.append(list);
  };
  const head = [];
  if (record.task) head.push(`Task: ${record.task}`);
  head.push(`Outcome: ${record.outcome}${record.outcome_reason ? ` (${record.outcome_reason})` : ""}`);
  add(`Structured (${record.source})`, head);
  add("Decisions", record.decisions.map((d) => `${d.chosen}${d.rationale ? ` because ${d.rationale}` : ""}`));
  add("Events", record.events.map((e) => `${day(e.at)} ${e.type}: ${e.text}`));
  add("Lessons", record.lessons.map((l) => l.text));
}

async function openEpisode(id) {
  const [got, chain] = await Promise.all([
    api("GET", `/v1/episodes/${encodeURIComponent(id)}?include_timeline=true&include_entities=true`),
    api("GET", `/v1/episodes/${encodeURIComponent(id)}/chain`),
  ]);
  const ep = got.episode;
  state.open = ep.id;
  $("episode").hidden = false;
  $("entity").hidden = true; // an entity's view, if open, was about another episode
  setText($("ep-title"), ep.title);
  setText(
    $("ep-meta"),
    `${ep.id} · project ${ep.project} · ${ep.status} · outcome ${ep.outcome || "unknown"} · ${counted(ep.memory_count, "memory")} · ` +
      `${day(ep.time_span.start)} → ${day(ep.time_span.end)} · cost ${usd(ep.cost_usd)}`,
  );
  setText($("ep-summary-kind"), `(${ep.summary_kind}, ${ep.summary_status})`);
  setText($("ep-summary"), ep.summary || "no summary yet");
  $("ep-close-go").hidden = ep.status !== "active";
  structured(ep.structured);
  for (const list of [$("ep-causes"), $("ep-effects")]) {
    list.replaceChildren(el("li", "…"));
    delete list.dataset.episode; // set again once this episode's links are shown
  }
  const named = $("ep-entities");
  named.replaceChildren();
  for (const [i, entity] of (got.entities || []).entries()) {
    if (i) named.append(textNode(" · "));
    const doubted = entity.doubted ? ", doubted" : "";
    const link = el("span", `${entity.name} (${entity.kind}, ${entity.mentions}${doubted})`, "entity");
    link.dataset.name = entity.name;
    setTip(link, "Open this entity: its episodes and memories");
    link.addEventListener("click", () => act(() => openEntity(entity.name, ep.project)));
    named.append(link);
  }
  if (!named.childNodes.length) setText(named, "none found");
  const chainList = $("ep-chain");
  chainList.replaceChildren();
  for (const link of chain.chain) {
    const item = el("li", `${link.title} (${link.status}, ${day(link.time_span.start)})`, link.id === ep.id ? "this" : "");
    if (link.id !== ep.id) item.addEventListener("click", () => act(() => openEpisode(link.id)));
    chainList.append(item);
  }
  const memories = $("ep-memories");
  memories.replaceChildren();
  for (const memory of got.timeline || []) {
    const item = el("li", null, memory.key_moment ? "key-moment" : "");
    item.dataset.id = memory.memory_id;
    item.append(el("span", `${day(memory.created_at)} ${memory.source_instance}`, "when"));
    item.append(textNode(`${memory.key_moment ? "★ " : ""}${memory.content}`));
    const remove = el("button", "remove");
    remove.type = "button";
    setTip(remove, "Remove this memory from the episode (the memory stays)");
    remove.addEventListener("click", () =>
      edit("DELETE", `/v1/episodes/${ep.id}/memories/${memory.memory_id}`, undefined, "removed"),
    );
    item.append(remove);
    memories.append(item);
  }
  showCauses(ep, got.timeline || []).catch(showError);
}

// -- causes and effects --------------------------------------------------------------------

const clip = (text, n = 90) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
const confidence = (c) => c.toFixed(2).replace(/0$/, "");

// The nodes of the open episode that its links rest on: the episode, and the memory each
// decision and event rests on (its first memory id), with what the view calls them.
function ownNodes(ep) {
  const own = new Map([[`episode:${ep.id}`, "this episode"]]);
  const record = ep.structured || {};
  for (const d of record.decisions || []) {
    if (d.memory_ids && d.memory_ids.length) own.set(`memory:${d.memory_ids[0]}`, `decision: ${clip(d.chosen)}`);
  }
  for (const e of record.events || []) {
    if (e.memory_ids && e.memory_ids.length) own.set(`memory:${e.memory_ids[0]}`, `${e.type}: ${clip(e.text)}`);
  }
  return own;
}

// Mark one memory of the open episode's list and bring it into view.
function pick(memoryId) {
  for (const item of $("ep-memories").children) item.classList.toggle("picked", item.dataset.id === memoryId);
  const picked = $("ep-memories").querySelector(".picked");
  if (picked) picked.scrollIntoView({ block: "center" });
}

// What the other end of a link is called, and how it opens: an episode opens its view; a
// memory opens the episode it is in, with the memory marked (a memory in no episode has no
// view to open).
async function describeNode(node, ep, own, timeline) {
  const at = node.indexOf(":");
  const [kind, key] = [node.slice(0, at), node.slice(at + 1)];
  if (kind === "episode") {
    if (key === ep.id) return { label: "this episode", open: null };
    const known = state.episodes.find((e) => e.id === key);
    const title = known ? known.title : (await api("GET", `/v1/episodes/${encodeURIComponent(key)}`)).episode.title;
    return { label: `episode: ${title}`, open: () => openEpisode(key) };
  }
  const member = timeline.find((m) => m.memory_id === key);
  if (own.has(node) || member) {
    const label = own.get(node) || `memory: ${clip(member.content)}`;
    return { label, open: async () => pick(key) };
  }
  const memory = await api("GET", `/v1/memory/${encodeURIComponent(key)}`);
  if (!memory.episode_id) return { label: `memory: ${clip(memory.content)} (in no episode)`, open: null };
  const holder = state.episodes.find((e) => e.id === memory.episode_id);
  const label = `memory: ${clip(memory.content)}${holder ? ` (in ${holder.title})` : ""}`;
  return { label, open: () => openEpisode(memory.episode_id).then(() => pick(key)) };
}

async function describeOrName(node, ep, own, timeline) {
  try {
    return await describeNode(node, ep, own, timeline);
  } catch (err) {
    if (err instanceof AuthNeeded) throw err;
    return { label: `${node} (${err.message})`, open: null }; // gone meanwhile, say
  }
}

// The episode's causes and effects: the links of its node (GET /v1/causes) and those its
// decisions and events carry (the episode read gives them), each once a side; the strongest
// first, with its source and confidence, the note as its tooltip.
async function showCauses(ep, timeline) {
  const own = ownNodes(ep);
  const query = new URLSearchParams({ node: `episode:${ep.id}`, project: ep.project });
  const read = await api("GET", `/v1/causes?${query}`);
  const record = ep.structured || {};
  const carried = [...(record.decisions || []), ...(record.events || [])].flatMap((i) => i.links || []);
  const links = new Map([...read.links, ...carried].map((link) => [link.id, link]));
  const rows = { causes: [], effects: [] };
  for (const link of links.values()) {
    if (own.has(link.effect)) rows.causes.push({ link, here: link.effect, other: link.cause });
    if (own.has(link.cause)) rows.effects.push({ link, here: link.cause, other: link.effect });
  }
  const others = [...new Set([...rows.causes, ...rows.effects].map((row) => row.other))];
  const named = new Map(await Promise.all(others.map(async (n) => [n, await describeOrName(n, ep, own, timeline)])));
  if (state.open !== ep.id) return; // another episode was opened meanwhile
  fillCausal($("ep-causes"), rows.causes, named, own, true);
  fillCausal($("ep-effects"), rows.effects, named, own, false);
  for (const list of [$("ep-causes"), $("ep-effects")]) list.dataset.episode = ep.id;
}

function fillCausal(list, rows, named, own, causes) {
  list.replaceChildren();
  rows.sort((a, b) => b.link.confidence - a.link.confidence || (a.link.created_at < b.link.created_at ? -1 : 1));
  for (const row of rows) {
    const item = el("li");
    item.dataset.id = row.link.id;
    item.dataset.node = row.other;
    const other = named.get(row.other);
    const end = el("span", other.label, other.open ? "node opens" : "node");
    if (other.open) {
      setTip(end, "Open it");
      end.addEventListener("click", () => act(other.open));
    }
    const here = el("span", own.get(row.here), "here");
    const arrow = textNode(" → ");
    if (causes) item.append(end, arrow, here);
    else item.append(here, arrow, end);
    item.append(el("span", `${row.link.source}, ${confidence(row.link.confidence)}`, "how"));
    if (row.link.note) setTip(item, row.link.note);
    list.append(item);
  }
  if (!rows.length) list.append(el("li", "none known"));
}

function edit(method, path, body, done) {
  return act(async () => {
    setText($("ep-action-result"), ""); // the earlier edit's
    const answer = await api(method, path, body);
    setText($("ep-action-result"), done);
    const id = answer.episode_id || (answer.episode && answer.episode.id) || state.open;
    await refresh();
    await openEpisode(id);
  });
}

const openPath = (suffix = "") => `/v1/episodes/${encodeURIComponent(state.open)}${suffix}`;
$("ep-rename-go").addEventListener("click", () => {
  const title = $("ep-rename").value.trim();
  if (title) edit("PATCH", openPath(), { title }, "renamed").then(() => ($("ep-rename").value = ""));
});
$("ep-close-go").addEventListener("click", () => edit("POST", openPath("/close"), undefined, "closed"));
$("ep-regenerate-go").addEventListener("click", () =>
  edit("POST", openPath("/regenerate"), undefined, "regeneration queued"),
);
$("ep-merge-go").addEventListener("click", () => {
  const other = $("ep-merge").value.trim();
  if (other) edit("POST", openPath("/merge"), { other_id: other }, "merged");
});
$("episode-close").addEventListener("click", () => {
  $("episode").hidden = $("entity").hidden = true;
  state.open = null;
});

// -- entity view ---------------------------------------------------------------------------

const ENTITY_MEMORIES = 50; // the API's largest page of an entity's latest memories
const byTime = (key) => (a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0);

// One entity of a project (GET /v1/entities/{name}): its kind, aliases (and the entities it
// is also written as, whose mentions it counts), first and last mention, and its episodes and
// latest memories, both in time order (the API answers them newest first). Opened from an
// episode's entities; closing it shows the episode again.
async function openEntity(name, inProject) {
  const query = new URLSearchParams({ project: inProject, limit: ENTITY_MEMORIES });
  const found = await api("GET", `/v1/entities/${encodeURIComponent(name)}?${query}`);
  const entity = found.entity;
  state.entity = { name: entity.name, project: found.project };
  $("entity").hidden = false;
  setText($("en-name"), entity.name);
  const doubted = entity.doubted ? " · doubted (no mention vouches for it)" : "";
  setText($("en-meta"), `${entity.kind} · project ${found.project} · named in ${counted(entity.mentions, "memory")}${doubted}`);
  const also = found.also_written_as.length ? ` · also written as ${found.also_written_as.join(", ")} (counted here)` : "";
  setText($("en-aliases"), `Aliases: ${entity.aliases.join(", ") || "none"}${also}`);
  setText($("en-seen"), `First seen ${day(entity.first_seen_at)} · last seen ${day(entity.last_seen_at)}`);
  const episodes = $("en-episodes");
  episodes.replaceChildren();
  for (const ep of [...found.episodes].sort(byTime("first_mention_at"))) {
    const item = el("li", `${day(ep.first_mention_at)} → ${day(ep.last_mention_at)} ${ep.title} (${counted(ep.mentions, "mention")})`);
    item.dataset.id = ep.episode_id;
    item.addEventListener("click", () => {
      $("entity").hidden = true;
      act(() => openEpisode(ep.episode_id));
    });
    episodes.append(item);
  }
  if (!found.episodes.length) episodes.append(el("li", "in no episode"));
  const shown = [...found.memories].sort(byTime("created_at"));
  setText(
    $("en-memories-note"),
    shown.length < found.memory_count ? `(time order, the latest ${shown.length} of ${found.memory_count})` : "(time order)",
  );
  const memories = $("en-memories");
  memories.replaceChildren();
  for (const memory of shown) {
    const item = el("li");
    item.dataset.id = memory.memory_id;
    item.append(el("span", day(memory.created_at), "when"));
    item.append(textNode(memory.content));
    memories.append(item);
  }
}

$("entity-close").addEventListener("click", () => {
  $("entity").hidden = true;
  state.entity = null;
});

// -- spend and health ----------------------------------------------------------------------

function ageText(seconds) {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

const QUIET_LLM_STATES = new Set(["offline", "disabled"]);

function llmBadge(llm) {
  const badge = $("llm-badge");
  if (!llm) {
    setText(badge, "episodes off");
    return;
  }
  // offline (no API key configured) and disabled are modes, not faults: neutral, extractive.
  const mode = QUIET_LLM_STATES.has(llm.state);
  // degraded: the provider answers, but the last calls got no usable answer.
  const failed = llm.state === "degraded" ? ` (${counted(llm.consecutive_failures, "failed call")} in a row)` : "";
  setText(badge, `LLM: ${llm.state}${mode ? ", extractive" : failed}`);
  const look = llm.state === "ready" ? "ready" : mode || llm.state === "starting" ? "neutral" : "degraded";
  badge.className = `badge ${look}`;
  setTip(badge, [llm.reason, llm.fallback].filter(Boolean).join(". "));
}

async function loadHealth() {
  const health = await api("GET", "/v1/health");
  llmBadge(health.llm);
  const llm = health.llm;
  setText(
    $("llm-state"),
    llm
      ? `${llm.state}${llm.reason ? `: ${llm.reason}` : ""}${llm.fallback ? ` — fallback: ${llm.fallback}` : ""}`
      : "The episode engine is off.",
  );
  const queue = health.episodes;
  setText(
    $("queue"),
    queue
      ? `${counted(queue.queue_depth, "job")} waiting, oldest ${ageText(queue.oldest_pending_age_seconds)}; ` +
          `${counted(queue.active_episodes, "active episode")}; ${counted(queue.classify_waiting, "memory")} waiting for the LLM`
      : "no episode queue (episodes are off)",
  );
  return health;
}

let spendChart = null;

async function loadSpend() {
  let costs;
  try {
    costs = await api("GET", "/v1/episodes/costs");
  } catch (err) {
    if (err instanceof AuthNeeded) throw err;
    setText($("spend-total"), `no spend figures: ${err.message}`);
    return;
  }
  const now = new Date();
  const month = costs.month || now.toISOString().slice(0, 7);
  setText($("spend-month"), month);
  const ceiling = costs.ceiling_usd;
  setText(
    $("spend-total"),
    `${usd(costs.spend_usd)} spent, ${usd(costs.reserved_usd)} reserved` +
      (ceiling == null ? ", no ceiling" : ` of the ${usd(ceiling)} ceiling (${usd(costs.remaining_usd)} left)`) +
      ` · ${counted(costs.calls, "call")} (${costs.failed_calls || 0} failed, ${costs.denied_calls || 0} denied)`,
  );
  const [year, mon] = month.split("-").map(Number);
  const days = new Date(Date.UTC(year, mon, 0)).getUTCDate();
  const items = [];
  let total = 0;
  for (let d = 1; d <= days; d++) {
    const key = `${month}-${String(d).padStart(2, "0")}`;
    const x = Date.UTC(year, mon - 1, d);
    const spent = (costs.by_day && costs.by_day[key] && costs.by_day[key].cost_usd) || 0;
    total += spent;
    items.push({ x, y: spent, group: "day" });
    if (x <= now.getTime()) items.push({ x, y: total, group: "cumulative" });
    if (ceiling != null) items.push({ x, y: ceiling, group: "ceiling" });
  }
  const groups = new vis.DataSet([
    { id: "day", content: "spend that day", options: { style: "bar" } },
    { id: "cumulative", content: "month so far", options: { style: "line", drawPoints: false } },
    { id: "ceiling", content: "ceiling", options: { style: "line", drawPoints: false } },
  ]);
  if (spendChart) spendChart.destroy();
  spendChart = new vis.Graph2d($("spend-chart"), new vis.DataSet(items), groups, {
    start: Date.UTC(year, mon - 1, 1) - DAY / 2,
    end: Date.UTC(year, mon - 1, days) + DAY / 2,
    legend: true,
    height: "260px",
    barChart: { width: 30, align: "center" },
    dataAxis: { left: { format: (v) => `$${Number(v).toFixed(3)}` } },
  });
  const body = $("purposes").tBodies[0];
  body.replaceChildren();
  for (const [purpose, row] of Object.entries(costs.by_purpose || {})) {
    const tr = el("tr");
    for (const cell of [purpose, row.calls, row.tokens, usd(row.cost_usd)]) tr.append(el("td", String(cell)));
    body.append(tr);
  }
  if (!body.rows.length) {
    const tr = el("tr");
    const td = el("td", "no LLM calls this month");
    td.colSpan = 4;
    tr.append(td);
    body.append(tr);
  }
}

// -- start ---------------------------------------------------------------------------------

function show(view) {
  $("timeline-view").hidden = view !== "timeline";
  $("health-view").hidden = view !== "health";
  $("tab-timeline").classList.toggle("on", view === "timeline");
  $("tab-health").classList.toggle("on", view === "health");
  if (view === "timeline" && state.timeline) state.timeline.redraw();
  return view === "health" ? Promise.all([loadHealth(), loadSpend()]) : Promise.resolve();
}

async function refresh() {
  const [episodes] = await Promise.all([loadEpisodes(), loadProjects()]);
  render(episodes);
}

async function discoverFilters() {
  // `project` is offered only when this daemon's episode list accepts it (newer daemons).
  const doc = await fetch("/openapi.json", { credentials: "omit" }).then((r) => r.json());
  const params = (doc.paths["/v1/episodes"].get.parameters || []).map((p) => p.name);
  state.hasProject = params.includes("project");
  $("project-filter").hidden = !state.hasProject;
  const outcome = doc.paths["/v1/episodes"].get.parameters.find((p) => p.name === "outcome");
  const schema = outcome && (outcome.schema.anyOf ? outcome.schema.anyOf[0] : outcome.schema);
  fillChoices($("f-outcome"), new Set((schema && schema.enum) || []));
}

async function start() {
  setText($("error"), "");
  try {
    // /v1/health needs no token and says when this caller is not let in ("hidden"): with no
    // token kept, the login is shown without sending requests that would answer 401
    const health = await api("GET", "/v1/health");
    if (health.hidden && !sessionStorage.getItem(TOKEN_KEY)) throw new AuthNeeded("sign in");
    await discoverFilters(); // first: whether episodes are listed by project
    const [episodes] = await Promise.all([loadEpisodes(), loadProjects()]);
    $("login").hidden = true;
    $("logout").hidden = !sessionStorage.getItem(TOKEN_KEY);
    show("timeline"); // before drawing: a hidden timeline has no size
    render(episodes);
    loadHealth().catch(showError);
    document.body.dataset.ready = "true";
  } catch (err) {
    showError(err);
  }
}

$("tab-timeline").addEventListener("click", () => act(() => show("timeline")));
$("tab-health").addEventListener("click", () => act(() => show("health")));
$("filters").addEventListener("submit", (event) => {
  event.preventDefault();
  act(refresh);
});
$("f-project").addEventListener("change", () => act(() => refresh().then(() => search())));
$("search-go").addEventListener("click", () => act(search));
$("search").addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    act(search);
  }
});
for (const button of document.querySelectorAll(".zoom button")) {
  button.addEventListener("click", () => zoom(Number(button.dataset.days)));
}
start();
