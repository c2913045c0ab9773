"""Find concepts in sentences with polarity, context and modifiers, from a lexicon."""
