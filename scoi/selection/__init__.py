"""Selection: from a sentence to its picked examples (preselection, candidates, methods,
recording). ``scoi.selection.selector.Selector`` is the entry point."""
