"""ragexam.metrics"""
