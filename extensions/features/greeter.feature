Feature: Greeter
  The greeter.greet tool's behaviour, tested through the same function, inside the sandbox.

  Scenario Outline: greeting in <lang>
    When I greet "<name>" in <lang>
    Then I hear "<greeting>"

    Examples:
      | name | lang | greeting        |
      | Ada  | en   | Hello, Ada!     |
      | Marc | fr   | Bonjour, Marc!  |

  Scenario: an unknown language
    When I greet "Ada" in xx
    Then I am told "no greeting for language"
