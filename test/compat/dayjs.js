// dayjs with its utc, timezone, customParseFormat, relativeTime, duration and advancedFormat plugins.
import dayjs from 'dayjs';
import advancedFormat from 'dayjs/plugin/advancedFormat.js';
import customParseFormat from 'dayjs/plugin/customParseFormat.js';
import duration from 'dayjs/plugin/duration.js';
import relativeTime from 'dayjs/plugin/relativeTime.js';
import timezone from 'dayjs/plugin/timezone.js';
import utc from 'dayjs/plugin/utc.js';
import { tool } from './_tool.js';

dayjs.extend(utc);
dayjs.extend(timezone);
dayjs.extend(customParseFormat);
dayjs.extend(relativeTime);
dayjs.extend(duration);
dayjs.extend(advancedFormat);

export const args = {};
export function run() {
  const d = dayjs.utc('2024-02-29T13:45:30.123Z');
  return {
    format: d.format('dddd, MMMM Do YYYY, HH:mm:ss.SSS [Q]Q X'),
    add: d.add(1, 'year').toISOString(),
    startOf: d.startOf('week').toISOString(),
    diff: d.diff(dayjs.utc('2024-01-01'), 'day', true),
    parse: dayjs.utc('03/04/2021 17:05', 'DD/MM/YYYY HH:mm').toISOString(),
    invalid: dayjs('not a date').isValid(),
    from: d.from(dayjs.utc('2024-03-10T00:00:00Z')),
    // humanize() measures from a fresh dayjs(): 90 minutes sat on the 1.5-hour rounding edge, so a clock tick
    // between its two readings of now turned "2 hours" into "an hour" (in Node or in the guest, by luck).
    duration: [dayjs.duration({ hours: 26, minutes: 5 }).format('HH:mm'), dayjs.duration(100, 'minutes').humanize(), dayjs.duration({ hours: 26 }).asDays()],
    tz: d.tz('America/New_York').format('YYYY-MM-DD HH:mm Z'),
  };
}
tool('dayjs', run);
