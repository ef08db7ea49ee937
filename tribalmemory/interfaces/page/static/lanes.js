// Pure decisions of the timeline: which lane each episode goes in, how it is coloured.

const HOUR = 3600 * 1000;
export const MIN_SPAN = 6 * HOUR; // a one-memory episode still shows as a bar

/** The bar of an episode: [start, end] in ms of memory time (span at least MIN_SPAN). */
export function barOf(episode) {
  const span = episode.time_span || {};
  const start = Date.parse(span.start || episode.created_at);
  const last = Date.parse(span.end || episode.last_activity_at || span.start || episode.created_at);
  return { start, end: Math.max(last, start + MIN_SPAN) };
}

/**
 * Greedy lane packing: bars sorted by start, each in the first lane whose last bar ended
 * before it starts; a new lane when none has. Returns Map id -> lane (0-based), lane count.
 */
export function packLanes(bars) {
  const order = [...bars].sort((a, b) => a.start - b.start || a.end - b.end || (a.id < b.id ? -1 : 1));
  const ends = [];
  const lane = new Map();
  for (const bar of order) {
    let i = ends.findIndex((end) => end < bar.start);
    if (i < 0) { i = ends.length; ends.push(bar.end); } else { ends[i] = bar.end; }
    lane.set(bar.id, i);
  }
  return { lane, count: ends.length };
}

const OUTCOMES = new Set(["success", "failure", "partial", "ongoing"]);

/** CSS classes for an episode's colour: its status (border, fading), its outcome (fill). */
export function colourOf(episode) {
  const outcome = OUTCOMES.has(episode.outcome) ? episode.outcome : "unknown";
  return `st-${episode.status} oc-${outcome}`;
}

// What tribalmemory/cli/output.py's clean() escapes: C0 controls but tab and newline, DEL,
// C1 controls, bidirectional marks, overrides and isolates, line and paragraph separators.
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * Text from the daemon (memories, titles, names, errors: written by agents and whatever they
 * read) made safe to show: each character that could reorder the text around it (U+202E then
 * "gnp.exe" reads "exe.png") or hide in it is shown as its escape, `\u202e`, `\x1b`, as the
 * CLI shows it.
 */
export function clean(text) {
  return String(text ?? "").replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** Text made safe for HTML. */
export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A count and its noun, plural unless the count is 1, by the rule of tribalmemory/plural.py:
 * counted(1, "memory") is "1 memory", counted(2, "memory") "2 memories". */
export function counted(count, noun) {
  const many = /[^aeiou]y$/.test(noun) ? `${noun.slice(0, -1)}ies` : `${noun}s`;
  return `${count} ${count === 1 ? noun : many}`;
}
