// Process signals of P-SDK-7 and P-SDK-8. Returns a function that removes the listeners,
// which gives the process its default signal behaviour back once the worker is done.

export interface SignalActions {
  shutdown(): void;
  quiet(): void;
  resume(): void;
}

export function installSignals(actions: SignalActions): () => void {
  const table: Array<[NodeJS.Signals, () => void]> = [
    ["SIGTERM", actions.shutdown],
    ["SIGINT", actions.shutdown],
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
