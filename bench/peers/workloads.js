// Guest code for the peer benchmarks (bench/peers/). Every peer loads this file's bytes unchanged into
// its sandbox, so every sandbox runs the same JavaScript. A plain script: no imports, no exports,
// strict-mode clean (the componentize-js peer puts it inside an ES module).
//
// The one entry point is benchCall(name, argsJson): JSON text in, JSON text out, so every peer pays the
// same guest-side JSON.parse of its argument and JSON.stringify of its result. The host side turns the
// returned text into a host value with JSON.parse.
//
// hostCalls() calls a global hostAdd(a, b) that each peer provides as a host function.

function noop(args) {
  return args;
}

function transform(input) {
  var items = input.items.map(function (x) {
    return { id: x.id, name: x.name.toUpperCase(), total: x.qty * x.price };
  });
  var sum = 0;
  for (var i = 0; i < items.length; i++) sum += items[i].total;
  return { count: items.length, sum: sum, items: items };
}

// 100,000 integers from a 32-bit LCG (Numerical Recipes constants), sorted with a comparator; the
// checksum is order-dependent, so it proves the sort as well as the input.
function sort() {
  var n = 100000;
  var a = [];
  var s = 12345;
  for (var i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a.push(s >>> 8);
  }
  a.sort(function (x, y) { return x - y; });
  var h = 0;
  for (var j = 0; j < n; j++) h = (Math.imul(h, 31) + a[j]) >>> 0;
  return h;
}

function fibRec(n) {
  return n < 2 ? n : fibRec(n - 1) + fibRec(n - 2);
}

function fib() {
  return fibRec(27);
}

function sieve() {
  var n = 2000000;
  var composite = new Uint8Array(n + 1);
  var count = 0;
  for (var i = 2; i <= n; i++) {
    if (composite[i] === 0) {
      count++;
      for (var j = i * i; j <= n; j += i) composite[j] = 1;
    }
  }
  return count;
}

function hostCalls() {
  var sum = 0;
  for (var i = 0; i < 1000; i++) sum = hostAdd(sum, i);
  return sum;
}

var WORKLOADS = { noop: noop, transform: transform, sort: sort, fib: fib, sieve: sieve, hostCalls: hostCalls };

function benchCall(name, argsJson) {
  return JSON.stringify(WORKLOADS[name](JSON.parse(argsJson)));
}
