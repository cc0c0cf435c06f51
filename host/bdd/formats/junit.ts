// junit: @cucumber/junit-xml-formatter's JUnitXmlPrinter, which cucumber-js 13 uses for `--format junit`. One
// <testsuite> written at testRunFinished: a <testcase> per scenario (its last attempt), failed, pending, undefined
// and ambiguous ones with a <failure>, skipped ones with <skipped>, the steps and statuses in <system-out>.
import { JUnitXmlPrinter } from '@cucumber/junit-xml-formatter';
import type { Formatter } from './formatter.js';

export function junitFormatter(write: (text: string) => void, suiteName: string): Formatter {
  const printer = new JUnitXmlPrinter({ suiteName }, write);
  return { update: (envelope) => printer.update(envelope), finish: async () => {} };
}
