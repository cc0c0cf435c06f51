Feature: CPU-bound scenarios (bench/run.mjs: kiln bdd --parallel 1 against --parallel 2)
  Scenario Outline: primes below <n>, run <run>
    When I count the primes below <n>
    Then there are <count> of them

    Examples:
      | run | n      | count |
      | 1   | 100000 | 9592  |
      | 2   | 100000 | 9592  |
      | 3   | 100000 | 9592  |
      | 4   | 100000 | 9592  |
      | 5   | 100000 | 9592  |
      | 6   | 100000 | 9592  |
      | 7   | 100000 | 9592  |
      | 8   | 100000 | 9592  |
