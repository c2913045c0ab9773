"""Find concepts in sentences with polarity, context and modifiers, from a lexicon."""

from clinsearch.annotate.quiet_imports import install

install()  # spaCy and medspaCy load without torch, scipy.stats and scikit-learn (see there)
