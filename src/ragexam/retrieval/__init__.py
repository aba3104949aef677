"""ragexam.retrieval"""
