import { componentLogger, type Logger } from '../util/logger.js';
import { NO_EVENTS, type EventPublisher } from './events.js';

/** What a use case is given beside its ports: where it reports what it did, and where it logs. */
export interface UseCaseDeps {
  readonly events?: EventPublisher;
  readonly logger?: Logger;
}

/** The publisher and logger of a use case: nobody listening, and the component's logger, by default. */
export function reportingOf(deps: UseCaseDeps, component: string): { readonly events: EventPublisher; readonly log: Logger } {
  return { events: deps.events ?? NO_EVENTS, log: deps.logger ?? componentLogger(component) };
}
