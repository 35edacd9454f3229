// Every process a spec or a benchmark starts ends with it: on a normal exit, on an
// uncaught error, and on SIGINT, SIGTERM or SIGHUP (how a caller, a process manager
// or `timeout` ends us). A simulator left running would hold its port, and the
// caller's pipe (it inherits our stderr), so that a script reading our output
// would wait for ever.
const live = new Set();

/** Ends `child` when this process ends; returns it. */
export function track(child) {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function endAll() {
  for (const child of live) {
    try {
      child.kill('SIGTERM');
    } catch {
      // Already gone.
    }
  }
}

process.on('exit', endAll);
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
  process.once(signal, () => {
    endAll();
    process.exit(code);
  });
}
