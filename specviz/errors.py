"""The error every loading step raises for a problem a user can cause or fix."""


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message is meant for the user, as is."""
