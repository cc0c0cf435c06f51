// luxon: DateTime in fixed zones, formatting, arithmetic, Duration, Interval, and a named time zone.
import { DateTime, Duration, Interval } from 'luxon';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const d = DateTime.fromISO('2024-02-29T13:45:30.123Z', { zone: 'utc' });
  const i = Interval.fromDateTimes(d, d.plus({ days: 45 }));
  return {
    iso: d.toISO(),
    plus: d.plus({ months: 1, hours: 12 }).toISO(),
    format: d.toFormat("yyyy-LL-dd HH:mm:ss.SSS 'week' WW ooo"),
    startOf: d.startOf('quarter').toISO(),
    diff: d.diff(DateTime.fromISO('2024-01-01T00:00:00Z', { zone: 'utc' }), ['days', 'hours']).toObject(),
    duration: Duration.fromObject({ hours: 26, minutes: 5 }).shiftTo('days', 'hours', 'minutes').toObject(),
    interval: [i.length('weeks'), i.count('months'), i.toISO()],
    fromFormat: DateTime.fromFormat('03/04/2021 17:05', 'dd/MM/yyyy HH:mm', { zone: 'utc' }).toISO(),
    invalid: DateTime.fromISO('2024-13-01').invalidReason,
    named: d.setZone('America/New_York').toISO(),
    locale: d.setLocale('fr').toFormat('DDDD'),
  };
}
tool('luxon', run);
