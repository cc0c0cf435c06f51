// A step that only computes: trial division, the same work in every scenario.
When('I count the primes below {int}', function (n) {
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
