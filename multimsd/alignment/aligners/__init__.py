"""The source papers' embedding-free aligners, plugged into ``align.py`` through ``aligner=<name>``.

* :mod:`multimsd.alignment.aligners.lexical` — Adduru et al. (2018): the mean of 12 string similarities, kept in a band;
* :mod:`multimsd.alignment.aligners.paraphrase` — their Siamese BiLSTM paraphrase identifier (the 12th similarity);
* :mod:`multimsd.alignment.aligners.classifier` — Cardon & Grabar: a random forest over pair features.
"""
