// moment: parsing in UTC and with formats, formatting, arithmetic, durations, diffs, locales and validity.
import moment from 'moment';
import 'moment/locale/fr.js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  moment.locale('en');
  const d = moment.utc('2024-02-29T13:45:30.123Z');
  return {
    iso: d.toISOString(),
    format: d.format('dddd, MMMM Do YYYY, h:mm:ss a [w]w Q'),
    add: d.clone().add(1, 'month').add(12, 'hours').format(),
    startOf: d.clone().startOf('isoWeek').format(),
    diff: [d.diff(moment.utc('2024-01-01'), 'days'), d.diff(moment.utc('2023-01-15'), 'months', true)],
    duration: [moment.duration(26 * 3600e3 + 5 * 60e3).humanize(), moment.duration('P1Y2M3DT4H').asHours()],
    from: d.from(moment.utc('2024-05-01')),
    parsed: moment.utc('03/04/2021 17:05', 'DD/MM/YYYY HH:mm').format(),
    strict: moment('2021-02-30', 'YYYY-MM-DD', true).isValid(),
    fr: d.clone().locale('fr').format('LLLL'),
    calendar: d.calendar(moment.utc('2024-02-28T10:00:00Z')),
    unix: d.unix(),
  };
}
tool('moment', run);
