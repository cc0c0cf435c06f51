// date-fns: formatting, parsing and arithmetic on fixed dates (the test runs Node with TZ=UTC; a guest's
// local time is UTC).
import { addBusinessDays, addMonths, differenceInCalendarDays, eachWeekendOfMonth, endOfQuarter, format, formatDistanceStrict, formatISO, formatRelative, getISOWeek, intervalToDuration, isLeapYear, parse, parseISO, startOfWeek, subYears } from 'date-fns';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const d = parseISO('2024-02-29T13:45:30.123Z');
  const base = new Date(Date.UTC(2024, 0, 15, 9, 0, 0));
  return {
    format: format(d, "EEEE, do MMMM yyyy 'at' HH:mm:ss.SSS (QQQ, 'week' I)"),
    formatISO: formatISO(d),
    addMonths: addMonths(d, 12).toISOString(),
    subYears: subYears(d, 1).toISOString(),
    businessDays: addBusinessDays(base, 10).toISOString(),
    diff: differenceInCalendarDays(d, base),
    weekends: eachWeekendOfMonth(d).map((x) => x.getUTCDate()),
    endOfQuarter: endOfQuarter(d).toISOString(),
    startOfWeek: startOfWeek(d, { weekStartsOn: 1 }).toISOString(),
    isoWeek: getISOWeek(d),
    leap: [isLeapYear(d), isLeapYear(subYears(d, 1))],
    parse: parse('03/04/2021 17:05', 'dd/MM/yyyy HH:mm', base).toISOString(),
    distance: formatDistanceStrict(d, base, { addSuffix: true }),
    relative: formatRelative(d, parseISO('2024-03-02T08:00:00Z')),
    duration: intervalToDuration({ start: base, end: d }),
  };
}
tool('date-fns', run);
