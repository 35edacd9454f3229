// What a V8 CPU profile (DevTools' `Profiler.stop`) ran in its stalls: stretches
// of `minMs` or more whose samples are all busy (none idle). Shared by the load
// bench (the engine worker's stalls, which hold token stamps back) and the memory
// bench (the page thread's long tasks, which a user feels).

/**
 * The stalls of `profile` of `minMs` or more: how many, their time in all, the
 * longest, each one's start (ms into the profile), length and top functions by
 * self time, and the functions by self time over all of them, top `top`.
 */
export function stallsOf(profile, minMs, top = 12) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const name = (id) => {
    const frame = nodes.get(id).callFrame;
    return frame.functionName || `(anonymous ${frame.url.split('/').at(-1)}:${frame.lineNumber})`;
  };
  // '(program)' is the browser's own native work on the thread (handing it chunks
  // and messages, layout and paint on the page's): busy, as far as a stamp or a
  // user's scroll is concerned.
  const idle = (id) => nodes.get(id).callFrame.functionName === '(idle)';
  const times = [];
  let t = profile.startTime;
  for (const d of profile.timeDeltas) times.push((t += d));
  const stretches = [];
  let from = null;
  for (let i = 0; i < profile.samples.length; i++) {
    const busy = !idle(profile.samples[i]);
    if (busy && from === null) from = i;
    if ((!busy || i === profile.samples.length - 1) && from !== null) {
      if ((times[i] - times[from]) / 1e3 >= minMs) stretches.push([from, i]);
      from = null;
    }
  }
  const bySelf = (a, b) => {
    const self = new Map();
    for (let i = a; i < b; i++) {
      const ms = (times[i + 1] - times[i]) / 1e3;
      self.set(name(profile.samples[i]), (self.get(name(profile.samples[i])) ?? 0) + ms);
    }
    return self;
  };
  const all = new Map();
  let totalMs = 0;
  const stalls = stretches.map(([a, b]) => {
    const self = bySelf(a, b);
    for (const [fn, ms] of self) {
      all.set(fn, (all.get(fn) ?? 0) + ms);
      totalMs += ms;
    }
    return {
      atMs: (times[a] - profile.startTime) / 1e3,
      ms: (times[b] - times[a]) / 1e3,
      top: [...self].sort((x, y) => y[1] - x[1]).slice(0, 5),
    };
  });
  const longest = Math.max(0, ...stalls.map((s) => s.ms));
  return { n: stalls.length, totalMs, longest, stalls, top: [...all].sort((x, y) => y[1] - x[1]).slice(0, top) };
}
