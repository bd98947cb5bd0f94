"""What every command shares, below the commands themselves (``multimsd run``, ``multimsd align|train|evaluate``,
``multimsd studio``) and above the stages: :mod:`~multimsd.commands.compose` composes a stage's config the way
its command does and checks a command line; :mod:`~multimsd.commands.stage` makes a stage's command (one
factory for align, train and evaluate) and runs a stage under the error contract (one ``error:`` line, exit
2); :mod:`~multimsd.commands.plugins` imports the user's plugins before a config is composed;
:mod:`~multimsd.commands.clash` is the checkout's ``evaluate.py`` beside the 🤗 ``evaluate`` package."""
