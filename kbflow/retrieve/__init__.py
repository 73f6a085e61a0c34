"""Retrieval: the legs, fusion, the Retriever and the citation resolver."""
