// rxjs: synchronous and scheduled pipelines, subjects, combination, errors and retries, collected to arrays.
import { BehaviorSubject, Subject, catchError, combineLatest, concatMap, defer, distinctUntilChanged, filter, firstValueFrom, from, interval, lastValueFrom, map, mergeMap, of, reduce, retry, scan, take, throwError, toArray, zip } from 'rxjs';
import { tool } from './_tool.js';

export const args = {};
export async function run() {
  const sync = [];
  from([1, 2, 3, 4, 5, 6]).pipe(filter((x) => x % 2 === 0), map((x) => x * 10), scan((a, x) => a + x, 0)).subscribe((v) => sync.push(v));
  const subject = new Subject();
  const seen = [];
  subject.pipe(distinctUntilChanged()).subscribe((v) => seen.push(v));
  for (const v of [1, 1, 2, 2, 3, 1]) subject.next(v);
  const behavior = new BehaviorSubject('a');
  const latest = [];
  combineLatest([behavior, of(1, 2)]).subscribe((v) => latest.push(v.join('')));
  behavior.next('b');
  let attempts = 0;
  const retried = await lastValueFrom(defer(() => (++attempts < 3 ? throwError(() => new Error(`fail ${attempts}`)) : of(`ok after ${attempts}`))).pipe(retry(5)));
  return {
    sync,
    seen,
    latest,
    retried,
    caught: await firstValueFrom(throwError(() => new Error('boom')).pipe(catchError((e) => of(`caught ${e.message}`)))),
    timed: await lastValueFrom(interval(1).pipe(take(4), concatMap((i) => of(i, i * 100)), toArray())),
    zipped: await lastValueFrom(zip(of('a', 'b', 'c'), interval(1).pipe(take(3))).pipe(map(([s, i]) => s + i), toArray())),
    merged: await lastValueFrom(of(1, 2, 3).pipe(mergeMap((x) => of(x, x)), reduce((a, x) => a + x, 0))),
  };
}
tool('rxjs', run);
