// A step that only computes: trial division, the same work in every scenario (about a second on a quiet
// machine, more while two workers tier the engine up on two cores). Its timeout is far above that: the bench
// measures how long the suite takes, and a step stopped at its limit would measure nothing.
When('I count the primes below {int}', { timeout: 120_000 }, function (n) {
  let count = 0;
  for (let i = 2; i < n; i++) {
    let prime = true;
    for (let d = 2; d * d <= i; d++) if (i % d === 0) { prime = false; break; }
    if (prime) count++;
  }
  this.count = count;
});
Then('there are {int} of them', function (expected) {
  if (this.count !== expected) throw new Error(`counted ${this.count}`);
});
