"""The records that flow between modules, declared once each.

A record is a dict whose keys are declared in one place, its class's FIELDS (name: meaning, with
units), so that a reader finds what a record holds without tracing who wrote which key, and a key
nobody declared is refused where it is written (TypeError: a programming error, not bad input).
Fields read and write as attributes too (`hw.sms` is `hw["sms"]`). Records stay dicts so that
`--json` prints them as they are. Not dataclasses or TypedDicts: `dataclasses` costs ~15 ms and
`typing` ~10 ms of start-up (python -X importtime, Python 3.11), against a budget of tens of
milliseconds for a whole answer.

Each record is declared beside the code that builds it: the accelerator (accelerator.Accelerator),
the network (comm/collectives.Network), the model spec (model/spec.ModelSpec), a layer's costs and
the memory config (train/). A subclass sets FIELDS and, where every field must be given, REQUIRED.
"""


def _field_getter(name):
    """rec.NAME: the field's value, None when the field is declared but not set (as .get says)."""
    def get(self):
        return self.get(name)
    get.__name__ = name
    return get


class Record(dict):
    """A dict with declared keys (FIELDS); REQUIRED ones must be given when it is built."""

    __slots__ = ()
    FIELDS = {}    # name -> meaning (units in the name or the text)
    REQUIRED = ()  # names that must be present at construction

    def __init_subclass__(cls, **kwargs):
        # each field reads as an attribute through a property made here, once per class: a
        # __getattr__ would do it too, but it slows every attribute lookup on the record (dict
        # methods included; the training search does millions). A field named like a dict
        # method (get, items, ...) is read with [] only.
        super().__init_subclass__(**kwargs)
        for name in cls.FIELDS:
            if name.isidentifier() and not hasattr(dict, name) and name not in cls.__dict__:
                setattr(cls, name, property(_field_getter(name)))

    def __init__(self, *args, **fields):
        super().__init__(*args, **fields)
        unknown = [k for k in self if k not in self.FIELDS]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {unknown[0]!r} (declared: "
                            f"{', '.join(self.FIELDS)})")
        missing = [k for k in self.REQUIRED if k not in self]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {missing[0]!r}")

    def __setitem__(self, key, value):
        if key not in self.FIELDS:
            raise TypeError(f"{type(self).__name__} has no field {key!r}")
        super().__setitem__(key, value)

    def __setattr__(self, name, value):
        # `rec.x = v` writes the field (checked); without this a subclass without __slots__ would
        # keep it in an instance __dict__, beside the dict, where --json never sees it
        self[name] = value

    def update(self, *args, **fields):
        for k, v in dict(*args, **fields).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def copy(self):
        return type(self)(self)
