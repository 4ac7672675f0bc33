"""postmortem: why did this distributed GPU training job die?"""

__version__ = "0.1.0"
