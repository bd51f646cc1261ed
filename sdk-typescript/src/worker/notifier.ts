// A one-shot wake-up for the poll loop: a slot freed, quiet changed, or shutdown began.
export class Notifier {
  private waiters: Array<() => void> = [];

  /** Resolves at the next notify(). */
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
