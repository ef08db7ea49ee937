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
