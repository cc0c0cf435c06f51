// What every report format is: a consumer of the run's Cucumber Messages (formats.ts picks one by name).
import type { Envelope } from '@cucumber/messages';

export interface Formatter {
  update(envelope: Envelope): void;   // called for every envelope, in order
  finish(): Promise<void>;            // after testRunFinished: flush everything
}
