"""The error gpuplan raises for bad input."""


class InputError(ValueError):
    """Bad input: which option (``field``), what was given (``value``) and what is accepted (``accepted``).

    ``field`` is the keyword argument at fault (``"tp"``), or a file and key (``"config.json: hidden_size"``);
    it is None when the message stands alone.
    """

    def __init__(self, message, field=None, value=None, accepted=None):
        super().__init__(message)
        self.field = field
        self.value = value
        self.accepted = accepted
