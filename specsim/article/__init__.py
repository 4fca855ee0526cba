"""article"""
