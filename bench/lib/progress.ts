/**
 * Progress of a bench run on stderr (stdout carries only the tables, the results path and the
 * last JSON line): a line when a phase starts, a line every few seconds while it runs with its
 * elapsed time, what it reports and an ETA (its own and the run's), and a line when it ends.
 */

export interface PlannedPhase {
  readonly key: string;
  /** Expected seconds. */
  readonly seconds: number;
}

export interface PhaseHandle {
  /** What the phase is doing now, shown on its next progress line. */
  note(text: string): void;
  /** The phase's own estimate of the seconds it still needs (phases whose length is not known up front). */
  remaining(seconds: number | null): void;
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} m`;
}

export class Progress {
  readonly #write: (line: string) => void;
  readonly #everyMs: number;
  readonly #started = Date.now();
  #plan: { key: string; seconds: number; done: boolean }[] = [];

  constructor(write: (line: string) => void = (l) => process.stderr.write(`${l}\n`), everyMs = 5000) {
    this.#write = write;
    this.#everyMs = everyMs;
  }

  /** The phases the run expects, in order: the run's ETA is what is left of them. */
  plan(phases: readonly PlannedPhase[]): void {
    this.#plan = phases.map((p) => ({ ...p, done: false }));
    const total = phases.reduce((a, p) => a + p.seconds, 0);
    this.line(`plan: ${phases.length} phases, about ${formatDuration(total)}`);
  }

  /** Adds phases to the plan (a sweep learns its next step as it goes). */
  extend(phases: readonly PlannedPhase[]): void {
    for (const p of phases) if (!this.#plan.some((x) => x.key === p.key)) this.#plan.push({ ...p, done: false });
  }

  line(text: string): void {
    this.#write(`[${formatDuration((Date.now() - this.#started) / 1000).padStart(8)}] ${text}`);
  }

  #leftAfter(key: string): number {
    return this.#plan.filter((p) => !p.done && p.key !== key).reduce((a, p) => a + p.seconds, 0);
  }

  async phase<T>(key: string, title: string, fn: (h: PhaseHandle) => Promise<T>): Promise<T> {
    const planned = this.#plan.find((p) => p.key === key && !p.done);
    const estimate = planned?.seconds ?? null;
    const start = Date.now();
    let note = '';
    let own: number | null = null;
    const verbose = estimate === null || estimate > 3;
    if (verbose) this.line(`> ${title}${estimate === null ? '' : ` (about ${formatDuration(estimate)})`}`);
    const timer = setInterval(() => {
      const elapsed = (Date.now() - start) / 1000;
      const phaseLeft = own ?? (estimate === null ? null : Math.max(0, estimate - elapsed));
      const runLeft = phaseLeft === null ? null : phaseLeft + this.#leftAfter(key);
      const eta = phaseLeft === null ? '' : ` - ETA ${formatDuration(phaseLeft)}${runLeft !== null && runLeft > phaseLeft ? `, run ${formatDuration(runLeft)}` : ''}`;
      this.line(`  ${title}: ${formatDuration(elapsed)}${estimate === null ? '' : ` of ~${formatDuration(estimate)}`}${note === '' ? '' : `, ${note}`}${eta}`);
    }, this.#everyMs);
    timer.unref();
    try {
      const out = await fn({
        note: (t) => {
          note = t;
        },
        remaining: (s) => {
          own = s;
        },
      });
      if (verbose || Date.now() - start > 3000) this.line(`= ${title}: done in ${formatDuration((Date.now() - start) / 1000)}`);
      return out;
    } finally {
      clearInterval(timer);
      if (planned !== undefined) planned.done = true;
    }
  }
}
