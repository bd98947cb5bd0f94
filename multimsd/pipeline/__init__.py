"""``multimsd run``: the whole pipeline (align → train → evaluate → report) in one command."""
