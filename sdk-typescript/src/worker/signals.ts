// Process signals of P-SDK-7 and P-SDK-8. Returns a function that removes the listeners,
// which gives the process its default signal behaviour back once the worker is done.

export interface SignalActions {
  /** SIGTERM or SIGINT, named so the worker can log it and word the shutdown (P-SDK-29). */
  shutdown(signal: "SIGTERM" | "SIGINT"): void;
  quiet(): void;
  resume(): void;
}

export function installSignals(actions: SignalActions): () => void {
  const table: Array<[NodeJS.Signals, () => void]> = [
    ["SIGTERM", () => actions.shutdown("SIGTERM")],
    ["SIGINT", () => actions.shutdown("SIGINT")],
  ];
  // SIGTSTP/SIGCONT do not exist on Windows.
  if (process.platform !== "win32") table.push(["SIGTSTP", actions.quiet], ["SIGCONT", actions.resume]);
  const listeners = table.map(([signal, action]) => {
    const listener = () => action();
    process.on(signal, listener);
    return [signal, listener] as const;
  });
  return () => {
    for (const [signal, listener] of listeners) process.removeListener(signal, listener);
  };
}
