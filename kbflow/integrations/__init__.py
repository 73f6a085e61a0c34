"""kbflow's retriever inside the agent frameworks, each in the framework's own kind of retriever:

- :mod:`kbflow.integrations.langchain`: a LangChain ``BaseRetriever`` returning ``Document``\\ s
  (``pip install 'kbflow[langchain]'``);
- :mod:`kbflow.integrations.llama_index`: a LlamaIndex ``BaseRetriever`` returning ``NodeWithScore``\\ s
  (``pip install 'kbflow[llamaindex]'``);
- :mod:`kbflow.integrations.haystack`: a Haystack component whose ``run()`` returns ``{"documents": [...]}``
  (``pip install 'kbflow[haystack]'``).

Each searches a lake (a path or URI) or a ``kbflow serve`` (a URL and a key) through :mod:`.searcher`, returns
exactly the chunks and order of :meth:`kbflow.Retriever.search`, and carries each hit's citation as a dict
(``label``, ``uri``, ``locator``, ...) that :func:`kbflow.resolve` turns back into the cited text; a "no good
match" is the metadata's ``low_confidence``, never an empty list. This package imports no framework; each module
imports its own.
"""
