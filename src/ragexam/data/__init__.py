"""ragexam.data"""
