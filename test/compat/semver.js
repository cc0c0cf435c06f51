// semver: parsing, comparing, ranges, increments, coercion.
import semver from 'semver';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const vs = ['1.2.3', '1.10.0', '1.2.3-beta.2', '1.2.3-beta.10', '2.0.0-rc.1', '0.9.9'];
  return {
    sorted: semver.sort([...vs]),
    rsorted: semver.rsort([...vs]),
    satisfies: vs.map((v) => semver.satisfies(v, '^1.2.0 || >=2.0.0-rc.0', { includePrerelease: true })),
    maxSatisfying: semver.maxSatisfying(vs, '~1.2.0'),
    inc: [semver.inc('1.2.3', 'minor'), semver.inc('1.2.3-beta.1', 'prerelease'), semver.inc('1.2.3', 'premajor', 'alpha')],
    coerce: [String(semver.coerce('v3.4 final')), String(semver.coerce('42'))],
    valid: [semver.valid('1.2'), semver.valid('v1.2.3'), semver.clean('  =v1.2.3 ')],
    range: [new semver.Range('1.x || >=2.5.0 <3').range, semver.minVersion('>1.4.2 <2').version, semver.intersects('^1.2', '~1.5')],
    diff: semver.diff('1.2.3', '1.3.0-alpha'),
    parsed: semver.parse('1.2.3-alpha.1+build.5'),
  };
}
tool('semver', run);
