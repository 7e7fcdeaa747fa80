"""Hand-written questions about Python's shipped docs (``pydoc_data.topics``, CPython 3.11.7).

Each entry is ``(topic, question, answers)``: the topic file
(``pydoc/corpus/<topic>.txt``) the question is about, a question as a user
would put it, and answer strings copied from that topic's text. The questions
are ours; the material is Python's documentation. ``build_qa.py`` verifies
every answer string by machine (present in the topic file, not generic) and
writes ``pydoc/qa.json``.
"""

QUESTIONS: list[tuple[str, str, list[str]]] = [
    # simple statements
    ("assert", "Which exception does a failing assert statement raise?", ["AssertionError"]),
    ("assert", "Which built-in variable is false when Python runs with -O?", ["__debug__"]),
    ("break", "Which loops can a break statement occur in?", ['nested in a "for" or "while" loop']),
    (
        "continue",
        "What does the continue statement go on with?",
        ["next cycle of the nearest enclosing loop"],
    ),
    (
        "del",
        "In which order does deleting a target list delete its targets?",
        ["recursively deletes each target"],
    ),
    (
        "global",
        "Where must a name listed in a global statement not be used before the statement?",
        ['textually preceding that "global" statement'],
    ),
    (
        "nonlocal",
        "Which scope do names in a nonlocal statement refer to?",
        ["nearest enclosing scope excluding globals"],
    ),
    ("pass", "What is the pass statement useful as?", ["placeholder"]),
    (
        "return",
        "What does a return statement in a generator function cause to be raised?",
        ["StopIteration"],
    ),
    (
        "return",
        "In an asynchronous generator function, what does a return statement with a value cause?",
        ['empty "return" statement'],
    ),
    ("raise", "Which attribute of an exception holds the traceback?", ["__traceback__"]),
    ("raise", "Which attribute does raise ... from set on the raised exception?", ["__cause__"]),
    ("raise", "What does a bare raise re-raise?", ["exception that is currently being handled"]),
    (
        "import",
        "What is a directive to the compiler to use syntax of a future Python release called?",
        ["future statement"],
    ),
    (
        "import",
        "How do you say how high to go up the package hierarchy in a relative import?",
        ["leading dots"],
    ),
    ("import", "Which attribute lists the names a star import takes from a module?", ["__all__"]),
    # compound statements
    ("try", "What kind of handler does a finally clause specify?", ["‘cleanup’ handler"]),
    (
        "try",
        "What happens if two nested handlers exist for an exception raised in the inner try clause?",
        ["the outer handler will not handle the exception"],
    ),
    (
        "try",
        "What happens to the exception variable at the end of an except clause?",
        ['cleared at the end of the "except" clause'],
    ),
    (
        "with",
        "Which method of the context manager does a with statement call on entry?",
        ["__enter__()"],
    ),
    (
        "with",
        "What happens to an exception in a with block when __exit__ returns false?",
        ["the exception is reraised"],
    ),
    ("for", "When is the else clause of a for loop executed?", ["When the iterator is exhausted"]),
    (
        "while",
        "When does the else clause of a while loop run?",
        ["which may be the first time it is tested"],
    ),
    (
        "function",
        "When are default parameter values evaluated?",
        ["when the function definition is executed"],
    ),
    (
        "function",
        'What do parameters after "*" or "*identifier" become?',
        ["keyword-only parameters"],
    ),
    (
        "function",
        "What is a **identifier parameter initialized to?",
        ["new ordered mapping receiving any excess keyword arguments"],
    ),
    ("class", "What namespace does a class body execute in?", ["new execution frame"]),
    (
        "class",
        "Is the order in which attributes are defined in a class body kept?",
        ["order in which attributes are defined in the class body is preserved"],
    ),
    ("async", "Which statement iterates over an asynchronous iterable?", ["async for"]),
    (
        "async",
        "Which methods does async with call instead of __enter__ and __exit__?",
        ["__aenter__"],
    ),
    (
        "await",
        "Where can an await expression be used?",
        ["Can only be used inside a *coroutine function*"],
    ),
    (
        "lambda",
        "What cannot functions created with lambda expressions contain?",
        ["cannot contain statements or annotations"],
    ),
    (
        "yield",
        "What does using a yield expression in a function body make that function?",
        ["generator function"],
    ),
    # expressions
    ("comparisons", "How is the chained comparison x < y <= z evaluated?", ["x < y and y <= z"]),
    (
        "comparisons",
        "Which operators test for object identity?",
        ['"is" and "is not" test for an object’s identity'],
    ),
    (
        "booleans",
        "What does the expression x or y return if x is true?",
        ["if *x* is true, its value is returned"],
    ),
    ("binary", "What is the @ operator intended for?", ["matrix multiplication"]),
    (
        "power",
        "How does the power operator bind compared with unary operators on its left?",
        ["binds more tightly than unary operators on its left"],
    ),
    ("shifting", "What is a right shift by n bits defined as?", ['floor division by "pow(2,n)"']),
    ("unary", "What is the bitwise inversion of x defined as?", ["-(x+1)"]),
    (
        "conversions",
        "When either argument of an arithmetic operator is complex, what happens to the other?",
        ["the other is converted to complex"],
    ),
    (
        "operator-summary",
        "In which direction do exponentiation and conditional expressions group?",
        ["group from right to left"],
    ),
    (
        "subscriptions",
        "Which class method makes a class subscriptable like list[int]?",
        ["__class_getitem__"],
    ),
    (
        "slicings",
        "When a slicing also looks like a subscription, which interpretation takes priority?",
        ["interpretation as a subscription takes priority"],
    ),
    ("exprlists", "What does an expression list containing a comma yield?", ["yields a tuple"]),
    (
        "calls",
        "What does a call raise when a keyword argument matches an already filled slot?",
        ['already filled, a "TypeError" exception is raised'],
    ),
    # lexical
    ("identifiers", "Which identifiers are soft keywords?", ['"match", "case" and "_"']),
    (
        "id-classes",
        "What does the interactive interpreter store in the identifier _?",
        ["result of the last evaluation"],
    ),
    (
        "id-classes",
        "What are names of the form __spam inside a class definition called?",
        ["Class-private names"],
    ),
    ("integers", "What limits the length of integer literals?", ["stored in available memory"]),
    ("imaginary", "What real part does an imaginary literal yield?", ["real part of 0.0"]),
    (
        "strings",
        "Which escape sequence names a character in the Unicode database?",
        ["\\N{*name*}"],
    ),
    ("strings", "What do you call string literals prefixed with r?", ["raw strings"]),
    (
        "formatstrings",
        "Which conversion flag calls repr() on the value in a format string?",
        ['\'!r\'" which calls "repr()"'],
    ),
    (
        "formatstrings",
        "Which format type multiplies the number by 100?",
        ["Multiplies the number by 100"],
    ),
    (
        "formatstrings",
        "Which alignment option centers a field?",
        ["Forces the field to be centered"],
    ),
    (
        "formatstrings",
        "Which option uses a comma as the thousands separator?",
        ["comma for a thousands separator"],
    ),
    # execution model
    ("execmodel", "What is a block of Python program text?", ["executed as a unit"]),
    (
        "execmodel",
        "Which exception is raised when a local name is referenced before it is bound?",
        ["UnboundLocalError"],
    ),
    (
        "naming",
        "Which namespace is searched for a name after the global namespace?",
        ["the builtins namespace is searched"],
    ),
    (
        "exceptions",
        "What does the interpreter do when an exception is not handled at all?",
        ["terminates execution of the program"],
    ),
    (
        "dynamic-features",
        "Which functions execute code in a given namespace dynamically?",
        ["do not have access to the full environment for resolving names"],
    ),
    # data model
    (
        "customization",
        "Which method computes the official string representation of an object?",
        ["__repr__()"],
    ),
    (
        "customization",
        "Which method is called to implement truth value testing and bool()?",
        ["Called to implement truth value testing"],
    ),
    (
        "customization",
        "Which method creates a new instance of a class before __init__?",
        ["__new__()"],
    ),
    (
        "customization",
        "Which method is called when an instance is about to be destroyed?",
        ["__del__()"],
    ),
    (
        "attribute-access",
        "Which method is called unconditionally to implement attribute accesses?",
        ["__getattribute__()"],
    ),
    (
        "attribute-access",
        "Which method is called when the default attribute access fails?",
        ["object.__getattr__(self, name)"],
    ),
    (
        "attribute-access",
        "Which class variable restricts instances to a fixed set of attributes?",
        ["__slots__"],
    ),
    (
        "sequence-types",
        "Which method implements the built-in len()?",
        ['Called to implement the built-in function "len()"'],
    ),
    (
        "sequence-types",
        "Which method implements membership test operators?",
        ["Called to implement membership test operators"],
    ),
    ("sequence-types", "Which method does reversed() call if present?", ["__reversed__()"]),
    (
        "numeric-types",
        "Which method implements the reflected addition operand?",
        ["__radd__(self, other)"],
    ),
    (
        "numeric-types",
        "Which method is called to implement operator.index()?",
        ['Called to implement "operator.index()"'],
    ),
    (
        "context-managers",
        "What does the __exit__ method of a context manager do?",
        ["Exit the runtime context related to this object"],
    ),
    ("specialattrs", "Which class attribute holds the method resolution order?", ["__mro__"]),
    ("specialattrs", "Which attribute gives the qualified name of a class?", ["__qualname__"]),
    (
        "callable-types",
        "Which method makes instances of a class callable?",
        ["__call__(self[, args...])"],
    ),
    # built-in types
    ("truth", "Which values of numeric types are considered false?", ["zero of any numeric type"]),
    (
        "typesmapping",
        "Which dict method inserts a key with a default value if it is missing?",
        ["setdefault"],
    ),
    (
        "typesmapping",
        "Which dict method removes and returns the last inserted pair?",
        ["popitem()"],
    ),
    ("typesmapping", "Which order do dictionaries preserve?", ["insertion order"]),
    (
        "typesmapping",
        "Which method does a dict subclass define to handle missing keys?",
        ["__missing__()"],
    ),
    ("string-methods", "Which string method returns a casefolded copy?", ["casefold()"]),
    ("string-methods", "Which string method removes a given prefix?", ["removeprefix"]),
    (
        "string-methods",
        "Which string method pads a numeric string with zeros on the left?",
        ["zfill"],
    ),
    ("string-methods", "Which string method splits a string at line boundaries?", ["splitlines"]),
    (
        "string-methods",
        "Which static method builds a translation table for str.translate?",
        ["maketrans"],
    ),
    ("typesseq", "What does a range object represent?", ["immutable sequence of numbers"]),
    ("typesseq-mutable", "Which method inserts x into a sequence at index i?", ["s.insert(i, x)"]),
    ("typesmodules", "Which attribute of a module is its symbol table?", ["symbol table"]),
    ("bltin-code-objects", "Which built-in function returns code objects?", ["compile()"]),
    ("bltin-ellipsis-object", "How is the Ellipsis object written?", ['"..."']),
    (
        "bltin-null-object",
        "How many null objects are there in Python?",
        ["exactly one null object"],
    ),
    # the debugger
    ("debugger", "Which pdb command prints a stack trace?", ["w(here)"]),
    ("debugger", "Which pdb command sets a temporary breakpoint?", ["tbreak"]),
    ("debugger", "Which pdb command continues until the current function returns?", ["r(eturn)"]),
    ("debugger", "Which file does pdb read commands from at start-up?", [".pdbrc"]),
    (
        "debugger",
        "Which pdb command continues until the next line in the current function?",
        ["n(ext)"],
    ),
    (
        "debugger",
        "Which built-in function enters the debugger at the calling stack frame?",
        ["breakpoint()"],
    ),
]
